"""Names for handles: the contacts readers (vCard, two-column mapping), how handles are
matched, the names in rendered transcripts, and a changed file changing exactly the days
whose people it renames (the manifest diff re-extracts those, and only those)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from tests.support.chatdb import DAD, JONAS, MAYA, PRIYA, THREADS, ChatArchive, write_chat_db
from varagity.graph import manifest as mf
from varagity.graph.archives import ArchiveFiles, scan_archives
from varagity.graph.contacts import (
    ContactBook,
    ContactsError,
    contacts_files,
    handle_key,
    load_contacts,
    parse_mapping,
    parse_vcard,
    read_contacts,
)
from varagity.graph.sources import read_archive
from varagity.graph.types import ThreadDay

VCARD = (
    "BEGIN:VCARD\r\n"
    "VERSION:3.0\r\n"
    "PRODID:-//Apple Inc.//macOS 15.3//EN\r\n"
    "N:Chen;Maya;;;\r\n"
    "FN:Maya Chen\r\n"
    "item1.TEL;type=CELL;type=VOICE;type=pref:+44 7700 \r\n"
    " 900123\r\n"
    "item1.X-ABLabel:mobile\r\n"
    "EMAIL;type=INTERNET;type=HOME:Maya.Chen@iCloud.com\r\n"
    "NOTE:Met at the book club\\, 2019\r\n"
    "END:VCARD\r\n"
    "BEGIN:VCARD\r\n"
    "VERSION:4.0\r\n"
    "N:Weber;Jonas;;;\r\n"
    'TEL;VALUE=uri;TYPE="voice,cell":tel:+1-415-555-0199;ext=12\r\n'
    "END:VCARD\r\n"
    "BEGIN:VCARD\r\n"
    "VERSION:3.0\r\n"
    "ORG:Hartwell & Sons;Legal\r\n"
    "TEL;TYPE=WORK:0044 20 7946 0018\r\n"
    "END:VCARD\r\n"
    "BEGIN:VCARD\r\n"
    "VERSION:3.0\r\n"
    "FN:Nobody\r\n"
    "ADR;TYPE=HOME:;;1 Main St;Springfield;;;\r\n"  # no number, no address: no handle
    "END:VCARD\r\n"
)


def _pairs(entries: list) -> list[tuple[str, str, int]]:
    return [(e.handle, e.name, e.line) for e in entries]


# --- vCard ----------------------------------------------------------------------------


def test_a_vcard_file_gives_every_number_and_address_of_each_named_card() -> None:
    assert _pairs(parse_vcard(VCARD)) == [
        ("+44 7700 900123", "Maya Chen", 6),  # folded over two lines, grouped (item1.)
        ("Maya.Chen@iCloud.com", "Maya Chen", 9),
        ("tel:+1-415-555-0199;ext=12", "Jonas Weber", 15),  # 4.0: no FN, a tel: URI
        ("0044 20 7946 0018", "Hartwell & Sons", 20),  # no FN or N: the organisation
    ]


def test_a_vcard_2_1_quoted_printable_name_is_decoded() -> None:
    text = (
        "BEGIN:VCARD\n"
        "VERSION:2.1\n"
        "N;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:Garc=C3=ADa;Jos=C3=A9;;;\n"
        "FN;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:Jos=C3=A9 Mar=C3=ADa =\n"
        "Garc=C3=ADa\n"
        "TEL;CELL;PREF:(617) 555-0101\n"
        "END:VCARD\n"
    )
    assert _pairs(parse_vcard(text)) == [("(617) 555-0101", "José María García", 6)]


def test_escapes_in_a_vcard_name_are_read() -> None:
    text = "BEGIN:VCARD\nVERSION:3.0\nFN:Okafor\\, Sam\nEMAIL:sam@example.org\nEND:VCARD\n"
    assert _pairs(parse_vcard(text)) == [("sam@example.org", "Okafor, Sam", 4)]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("FN:Maya\n", 1, "FN outside a card"),
        ("BEGIN:VCARD\nFN:Maya\nTEL:+15550100\n", None, "card begun on line 1 has no END:VCARD"),
        ("BEGIN:VCARD\nFN:A\nBEGIN:VCARD\n", 3, "inside the card begun on line 1"),
        ("BEGIN:VCARD\nVERSION:5.0\nEND:VCARD\n", 2, "VERSION '5.0'"),
        ("BEGIN:VCARD\nFN Maya Chen\nEND:VCARD\n", 2, "no ':' after a property name"),
        (" continued\nBEGIN:VCARD\n", 1, "folded continuation line"),
        ("BEGIN:VCALENDAR\n", 1, "BEGIN:VCALENDAR is not a vCard"),
        ("BEGIN:VCARD\nFN:A\nEND:VCALENDAR\n", 3, "closes the card begun on line 1"),
        ("BEGIN:VCARD\nFN:A\nTEL:+15550100\nEND:VCARD\nEND:VCARD\n", 5, "with no BEGIN:VCARD"),
        ("BEGIN:VCARD\nFN;ENCODING=QUOTED-PRINTABLE;CHARSET=ascii:=C3=A9\n", 2, "not ascii"),
        ("BEGIN:VCARD\nbad name:x\n", 2, "not a vCard property name"),
    ],
)
def test_a_malformed_vcard_names_the_line_and_the_fault(
    text: str, line: int | None, says: str
) -> None:
    with pytest.raises(ContactsError) as caught:
        parse_vcard(text, path="phone/contacts.vcf")
    assert caught.value.line == line
    assert says in str(caught.value)
    assert str(caught.value).startswith(
        "phone/contacts.vcf: " + (f"line {line}: " if line is not None else "")
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no vCard in it"),
        ("\n\n", "no vCard in it"),
        (
            "BEGIN:VCARD\nFN:A\nADR:;;x;;;;\nEND:VCARD\nBEGIN:VCARD\nTEL:+15550100\nEND:VCARD\n",
            "none of its 2 card(s) gives both a name and a phone number or e-mail address "
            "(1 without a name, 1 without a usable number or address)",
        ),
        ("BEGIN:VCARD\nFN:Florist\nTEL:1-800-FLOWERS\nEND:VCARD\n", "none of its 1 card(s)"),
    ],
)
def test_a_vcard_that_names_no_handle_is_an_error(text: str, says: str) -> None:
    with pytest.raises(ContactsError, match=r"contacts\.vcf") as caught:
        parse_vcard(text)
    assert says in str(caught.value)
    assert caught.value.line is None


# --- two-column mapping ---------------------------------------------------------------


def test_a_mapping_with_or_without_a_header() -> None:
    plain = "+44 7700 900123,Maya Chen\njonas.weber@icloud.com, Jonas Weber\n"
    assert _pairs(parse_mapping(plain)) == [
        ("+44 7700 900123", "Maya Chen", 1),
        ("jonas.weber@icloud.com", "Jonas Weber", 2),
    ]
    headed = "# exported by hand\nhandle,name\n\n+16175550101,Dad\n" + '"maya@x.org","Chen, Maya"\n'
    assert _pairs(parse_mapping(headed)) == [
        ("+16175550101", "Dad", 4),
        ("maya@x.org", "Chen, Maya", 5),
    ]


def test_a_header_can_put_the_name_first() -> None:
    text = "Name,Phone\nDad,+1 617 555 0101\n"
    assert _pairs(parse_mapping(text)) == [("+1 617 555 0101", "Dad", 2)]


@pytest.mark.parametrize(
    ("text", "delimiter"),
    [
        ("+16175550101\tDad\n", "\t"),  # a .tsv
        ("+16175550101;Dad\n", None),  # a spreadsheet's semicolons, found from the first row
        ("+16175550101,Dad,,\n", None),  # its trailing empty columns
    ],
)
def test_mapping_delimiters(text: str, delimiter: str | None) -> None:
    assert _pairs(parse_mapping(text, delimiter=delimiter)) == [("+16175550101", "Dad", 1)]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("Maya Chen,+447700900123\n", 1, "'Maya Chen' is not a phone number or e-mail address"),
        ("handle,name\n+15550100,A\nDad,+16175550101\n", 3, "'Dad' is not a phone number"),
        ("+15550100,Chen, Maya\n", 1, "3 columns where a row has two"),
        ("+15550100,A\njust a name\n", 2, "one column where a row has two"),
        ("+15550100\n", 1, "no name for '+15550100'"),
        ("+15550100,A\n+1 555 0100,B\n", 2, "'+1 555 0100' is named 'B' here and 'A' on line 1"),
        ('+15550100,"Maya "Mo" Chen"\n', 1, "not ','-separated text"),
    ],
)
def test_a_malformed_mapping_names_the_line_and_the_fault(text: str, line: int, says: str) -> None:
    with pytest.raises(ContactsError) as caught:
        parse_mapping(text, path="contacts.csv")
    assert caught.value.line == line
    assert says in str(caught.value)
    assert str(caught.value).startswith(f"contacts.csv: line {line}: ")


@pytest.mark.parametrize("text", ["", "handle,name\n", "# nothing yet\n\n"])
def test_a_mapping_with_no_row_is_an_error(text: str) -> None:
    with pytest.raises(ContactsError, match=r"contacts.csv: no 'handle, name' row"):
        parse_mapping(text)


def test_the_same_name_twice_is_no_conflict() -> None:
    assert len(parse_mapping("+15550100,A\n+1 (555) 0100,A\n")) == 2


def test_files_are_read_by_their_ending_and_must_be_text(tmp_path: Path) -> None:
    (tmp_path / "contacts.tsv").write_text("+16175550101\tDad, at home\n", encoding="utf-8")
    assert _pairs(read_contacts(tmp_path / "contacts.tsv")) == [("+16175550101", "Dad, at home", 1)]
    (tmp_path / "contacts.vcf").write_bytes(VCARD.encode("utf-16"))  # Outlook's exports
    assert len(read_contacts(tmp_path / "contacts.vcf")) == 4
    (tmp_path / "contacts.csv").write_bytes(b"+16175550101,Dad\n+15550100,Jos\xe9\n")
    with pytest.raises(ContactsError, match=r"line 2: not UTF-8 text \(byte 0xe9\)"):
        read_contacts(tmp_path / "contacts.csv")
    with pytest.raises(ContactsError, match="cannot be read"):
        read_contacts(tmp_path / "missing.csv")


# --- matching handles -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "handle"),
    [
        ("+44 7700 900123", "+447700900123"),
        ("+44 (0)7700-900123", "+447700900123"),
        ("0044 7700 900123", "+447700900123"),
        ("tel:+1-415-555-0199;ext=12", "+14155550199"),
        ("+1 (415) 555-0199 x12", "+14155550199"),
        ("Maya.Chen@iCloud.com", "maya.chen@icloud.com"),
        ("mailto:maya.chen@icloud.com", "MAYA.CHEN@ICLOUD.COM"),
    ],
)
def test_a_handle_matches_however_the_number_or_address_is_written(
    written: str, handle: str
) -> None:
    assert handle_key(written) == handle_key(handle)
    assert ContactBook([(written, "Maya Chen")]).name_for(handle) == "Maya Chen"


@pytest.mark.parametrize("value", ["Me", "Unknown", "Maya Chen", "n/a", "1-800-FLOWERS", "12", ""])
def test_what_is_not_a_handle(value: str) -> None:
    assert handle_key(value) is None


def test_different_numbers_do_not_match() -> None:
    book = ContactBook([("+44 7700 900123", "Maya Chen"), ("maya@x.org", "Maya")])
    assert book.name_for("+447700900124") is None
    assert book.name_for("+17700900123") is None  # same digits, another country
    assert book.name_for("maya@x.org.uk") is None


def test_a_number_saved_without_its_country_code_names_the_handle_it_ends() -> None:
    book = ContactBook([("07700 900123", "Maya Chen"), ("(617) 555-0101", "Dad")])
    assert book.name_for("+447700900123") == "Maya Chen"
    assert book.name_for("+16175550101") == "Dad"
    assert book.name_for("+33617555010") is None  # ends otherwise
    # fewer than seven digits cannot tell people apart: no guess
    assert ContactBook([("55 0101", "Someone")]).name_for("+16175550101") is None
    assert ContactBook([("555 0101", "Someone")]).name_for("+16175550101") == "Someone"
    # a handle saved without a country code (old SMS threads) names the one number it
    # ends; when it ends two people's numbers, it names neither
    abroad = ContactBook([("+44 7700 900123", "Maya"), ("+1 617 555 0101", "Dad")])
    assert abroad.name_for("07700900123") == "Maya"
    twins = ContactBook([("+44 7700 900123", "Maya"), ("+1 7700 900123", "Someone else")])
    assert twins.name_for("07700900123") is None
    # an exact number wins over a national one
    exact = ContactBook([("07700 900123", "Maya"), ("+44 7700 900123", "Maya Chen")])
    assert exact.name_for("+447700900123") == "Maya Chen"


def test_a_later_entry_wins_and_lookups_are_recorded() -> None:
    book = ContactBook([("+16175550101", "Robert"), ("+1 617 555 0101", "Dad")])
    assert len(book) == 1
    assert book.label("+16175550101") == "Dad"
    assert book.label("Me") == "Me"
    assert book.label("+14155550178") == "+14155550178"
    assert book.named() == {"+16175550101": "Dad"}
    assert book.unnamed() == ["+14155550178"]  # "Me" is no handle
    with pytest.raises(ValueError, match="not a phone number"):
        ContactBook([("Dad", "+16175550101")])


def test_a_thread_named_by_its_members_gets_their_names() -> None:
    book = ContactBook([(MAYA, "Maya Chen"), (JONAS, "Jonas Weber")])
    assert book.thread_name(f"{PRIYA}, {JONAS}") == f"{PRIYA}, Jonas Weber"
    assert book.thread_name(MAYA) == "Maya Chen"
    assert book.thread_name("Lisbon trip") == "Lisbon trip"


# --- where the files are -------------------------------------------------------------


def test_the_files_of_the_folder_and_every_folder_above_apply(tmp_path: Path) -> None:
    root = tmp_path / "graph-docs"
    (root / "phone" / "old").mkdir(parents=True)
    (root / "laptop").mkdir()
    (root / "contacts.vcf").write_text(VCARD, encoding="utf-8")
    (root / "phone" / "Contacts.CSV").write_text("+447700900123,Maya\n", encoding="utf-8")
    (root / "phone" / "contacts.vcf").mkdir()  # a folder of that name is no file
    assert contacts_files(root, "laptop/chat.db") == (root / "contacts.vcf",)
    assert contacts_files(root, "phone/old/chat.db") == (
        root / "contacts.vcf",
        root / "phone" / "Contacts.CSV",
    )
    # merged: the folder's own mapping corrects the export above it
    assert load_contacts(root, "phone/old/chat.db").name_for("+447700900123") == "Maya"
    laptop = load_contacts(root, "laptop/chat.db")
    assert laptop.name_for("+447700900123") == "Maya Chen"
    assert laptop.files == ("contacts.vcf",)
    assert load_contacts(tmp_path / "empty", "chat.db").files == ()
    with pytest.raises(ValueError, match="inside the graph folder"):
        contacts_files(root, "../chat.db")


def test_a_number_on_two_cards_keeps_the_first_cards_name(tmp_path: Path) -> None:
    (tmp_path / "contacts.vcf").write_text(
        "BEGIN:VCARD\nFN:Mum\nTEL:+1 617 555 0100\nEND:VCARD\n"
        "BEGIN:VCARD\nFN:Dad\nTEL:+1 617 555 0100\nTEL:+16175550101\nEND:VCARD\n",
        encoding="utf-8",
    )
    book = load_contacts(tmp_path, "chat.db")
    assert (book.name_for("+16175550100"), book.name_for("+16175550101")) == ("Mum", "Dad")


def test_a_broken_file_fails_the_load_naming_it(tmp_path: Path) -> None:
    (tmp_path / "contacts.csv").write_text("+16175550101,Dad\nDad\n", encoding="utf-8")
    with pytest.raises(ContactsError) as caught:
        load_contacts(tmp_path, "chat.db")
    assert caught.value.path == tmp_path / "contacts.csv"
    assert caught.value.line == 2


# --- transcripts ------------------------------------------------------------------------

FAMILY = f"{MAYA},Maya Chen\n(617) 555-0101,Dad\n"


@pytest.fixture
def archive(tmp_path: Path) -> ChatArchive:
    return write_chat_db(tmp_path / "graph-docs")


def _days(archive: ChatArchive, contacts: ContactBook | None) -> dict[str, ThreadDay]:
    root = archive.path.parent
    return {d.doc_key: d for d in read_archive(root, "chat.db", tz=UTC, contacts=contacts)}


def _book(archive: ChatArchive, mapping: str) -> ContactBook:
    (archive.path.parent / "contacts.csv").write_text(mapping, encoding="utf-8")
    return load_contacts(archive.path.parent, "chat.db")


def test_contacts_mapping_renames_a_handle_in_a_transcript(archive: ChatArchive) -> None:
    plain = _days(archive, None)
    named = _days(archive, _book(archive, FAMILY))
    assert set(named) == set(plain)  # the same days, the same doc_keys

    lisbon = named[f"{THREADS['lisbon'].guid}::2026-03-02"]
    assert lisbon.text.splitlines()[0].startswith("[18:05] Maya Chen: Okay team, Lisbon")
    assert MAYA not in lisbon.text
    assert "[18:09] Me: Same." in lisbon.text  # the owner stays Me
    assert f"[18:12] {PRIYA}: Yes please!" in lisbon.text  # not in the mapping: as it was
    assert f"] {JONAS}: " in lisbon.text
    assert lisbon.message_guids == plain[lisbon.doc_key].message_guids

    dad = named[f"{THREADS['dad'].guid}::2026-03-03"]
    assert "[23:40] Dad: Did you sign the Hartwell contract today?" in dad.text
    assert dad.thread_name == "Dad"  # a 1:1 chat is named by its member
    assert plain[dad.doc_key].thread_name == DAD

    # every line of every day: the sender is the name, or the handle when unnamed
    for key, day in named.items():
        for mine, theirs in zip(day.text.splitlines(), plain[key].text.splitlines(), strict=True):
            expected = theirs.replace(f"] {MAYA}: ", "] Maya Chen: ", 1).replace(
                f"] {DAD}: ", "] Dad: ", 1
            )
            assert mine == expected


def test_the_owner_is_written_by_the_name_the_settings_give(archive: ChatArchive) -> None:
    plain = _days(archive, None)
    owned = _days(archive, load_contacts(archive.path.parent, "chat.db", owner="Noor Haddad"))
    lisbon = owned[f"{THREADS['lisbon'].guid}::2026-03-02"]
    assert "[18:09] Noor Haddad: Same." in lisbon.text and "] Me: " not in lisbon.text
    assert "Noor Haddad" in lisbon.senders
    # only the days the owner wrote in change (and so are extracted again)
    changed = {k for k, d in owned.items() if d.content_sha256 != plain[k].content_sha256}
    assert changed == {k for k, d in plain.items() if "] Me: " in d.text}
    assert changed != set(plain)


def test_a_group_named_by_its_members_reads_their_names(archive: ChatArchive) -> None:
    named = _days(archive, _book(archive, f"{PRIYA},Priya Nair\n"))
    books = [d for d in named.values() if d.thread_id == THREADS["books"].guid]
    assert books
    for day in books:
        assert day.thread_name == f"Priya Nair, {JONAS}"  # its members, Jonas unnamed
    plain = _days(archive, None)
    assert {plain[d.doc_key].thread_name for d in books} == {f"{PRIYA}, {JONAS}"}


def test_a_changed_mapping_changes_exactly_the_days_it_renames(
    archive: ChatArchive, tmp_path: Path
) -> None:
    workdir = tmp_path / "workdir"
    first = _days(archive, _book(archive, f"{MAYA},Maya Chen\n"))
    mf.write_manifest(workdir, {k: mf.ManifestEntry.of(d) for k, d in first.items()})
    same = mf.diff(first.values(), mf.read_manifest(workdir), source="chat.db")
    assert same.empty

    # Dad gets a name: his days change (delete, then reinsert), nothing else does
    second = _days(archive, _book(archive, FAMILY))
    diff = mf.diff(second.values(), mf.read_manifest(workdir), source="chat.db")
    has_dad = {k for k, d in first.items() if DAD in d.text or DAD in d.thread_name}
    assert has_dad and has_dad < set(first)
    assert {d.doc_key for d in diff.changed} == has_dad
    assert not diff.new and not diff.removed
    for day in diff.changed:
        assert day.content_sha256 != first[day.doc_key].content_sha256

    # Maya renamed: her days change; removing the file puts every handle back
    third = _days(archive, _book(archive, f"{MAYA},Maya C.\n(617) 555-0101,Dad\n"))
    renamed = mf.diff(
        third.values(), {k: mf.ManifestEntry.of(d) for k, d in second.items()}, source="chat.db"
    )
    has_maya = {
        k for k, d in first.items() if "Maya Chen" in d.text or "Maya Chen" in d.thread_name
    }
    assert {d.doc_key for d in renamed.changed} == has_maya
    (archive.path.parent / "contacts.csv").unlink()
    back = _days(archive, load_contacts(archive.path.parent, "chat.db"))
    assert back == _days(archive, None)


# --- the folder: contacts are no archives, and part of each archive's signature ---------


def test_a_contacts_file_is_no_archive_and_changes_the_archives_it_names(
    archive: ChatArchive,
) -> None:
    root = archive.path.parent
    [alone] = scan_archives(root)
    assert alone.contacts == ()
    bare = ArchiveFiles(alone.relative_path, alone.path, alone.companions)
    assert alone.content_sha256() == bare.content_sha256()  # no file: the signature of old
    stat = alone.stat_signature()

    (root / "contacts.vcf").write_text(VCARD, encoding="utf-8")
    [named] = scan_archives(root)  # the contacts file is no candidate of its own
    assert named.relative_path == "chat.db"
    assert named.contacts == (root / "contacts.vcf",)
    assert named.inputs == (*named.paths, root / "contacts.vcf")
    assert named.paths == alone.paths
    assert named.stat_signature()[: len(stat)] == stat
    assert len(named.stat_signature()) == len(stat) + 1
    signed = named.content_sha256()
    assert signed != alone.content_sha256()
    assert named.content_sha256() == signed  # deterministic

    (root / "contacts.vcf").write_text(VCARD.replace("Maya Chen", "Maya C."), encoding="utf-8")
    [renamed] = scan_archives(root)
    assert renamed.content_sha256() not in (signed, alone.content_sha256())
