"""Names for handles: a contacts file beside the archives turns ``+447700900123`` into
``Maya Chen`` in the transcripts, and so in what the engine extracts and in answers.

Messages keeps no names; they live in the address book. A user who wants them exports
the address book as a vCard file, or writes a two-column mapping, and puts it in the
graph folder (``GRAPH_DOCS_PATH``) or a folder below it under one of the names in
:data:`CONTACTS_FILES`. Every archive in that folder and below uses it. Nothing is
sent anywhere: the file is read where it lies, like the archives.

* **vCard** (``contacts.vcf``; 3.0 and 4.0, and the 2.1 that Android exports): every
  card with a name (``FN``, else ``N``, else ``ORG``, else ``NICKNAME``) and a phone
  number (``TEL``) or e-mail address (``EMAIL``). Folded lines, grouped properties
  (``item1.TEL``), ``tel:``/``mailto:`` values, escapes and quoted-printable values are
  read. A number or address on two cards keeps the first card's name.
* **Mapping** (``contacts.csv``, ``contacts.tsv``): one ``handle,name`` row per handle,
  a header row allowed (``name,phone`` in that order swaps the columns), ``#`` comment
  lines and blank lines skipped; a name holding the delimiter is quoted. A handle named
  twice with two different names is an error.

Handles are compared as people read them: phone numbers by their digits, so ``+44 7700
900123``, ``+44 (0)7700-900123`` and ``0044 7700 900123`` are the handle
``+447700900123`` (an extension is dropped); e-mail addresses ignoring case. A number
saved without its country code (``07700 900123``, ``(415) 555-0178``) names a handle
whose international number ends with its digits (at least :data:`MIN_NATIONAL_DIGITS`,
leading zeros dropped) when exactly one name fits.

When several files apply to an archive they are merged: the graph folder's first, then
each folder down to the archive's own, and within a folder the vCard before the
mappings; a later file's name for a handle wins (a hand-written mapping corrects an
export; a folder's file corrects the one above it).

A file that cannot be read is an error naming the file, the line and what is wrong
(:class:`ContactsError`), and so is a file that names no handle: a contacts file that
silently did nothing would leave every handle as it was with no sign of why.
"""

from __future__ import annotations

import codecs
import csv
import os
import quopri
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from varagity.graph.types import OWNER

__all__ = [
    "CONTACTS_FILES",
    "MIN_NATIONAL_DIGITS",
    "ContactBook",
    "ContactsError",
    "NamedHandle",
    "contacts_files",
    "handle_key",
    "is_contacts_file",
    "load_contacts",
    "parse_mapping",
    "parse_vcard",
    "read_contacts",
]

#: The file names a contacts file has (any case), in the order a folder's are merged.
CONTACTS_FILES = ("contacts.vcf", "contacts.csv", "contacts.tsv")
#: The fewest digits (leading zeros dropped) a number saved without its country code
#: must have to name an international handle it ends with: fewer would match strangers.
MIN_NATIONAL_DIGITS = 7
_MIN_PHONE_DIGITS = 3  # short codes ("22395") are handles too
_VCARD_VERSIONS = ("2.1", "3.0", "4.0")
_HANDLE_WORDS = {
    "handle",
    "phone",
    "phone number",
    "number",
    "mobile",
    "tel",
    "telephone",
    "email",
    "e-mail",
    "email address",
    "address",
    "id",
}
_NAME_WORDS = {"name", "full name", "display name", "contact", "contact name", "person"}


class ContactsError(ValueError):
    """A contacts file cannot be used; the message names the file, the line (when one
    is to blame) and what is wrong."""

    def __init__(self, path: Path | str, reason: str, *, line: int | None = None) -> None:
        where = f"{path}: line {line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {reason}")
        self.path = Path(path)
        self.reason = reason
        self.line = line


@dataclass(frozen=True)
class NamedHandle:
    """One handle a contacts file names, and the line it was named on."""

    handle: str
    name: str
    line: int


def is_contacts_file(name: str) -> bool:
    """Whether a file called ``name`` is a contacts file (not an archive)."""
    return name.lower() in CONTACTS_FILES


# --- handles ------------------------------------------------------------------------

_EXTENSION = re.compile(r"(;|,|\bext\b\.?|\bextension\b|x|#|p|w).*$", re.IGNORECASE)
_PHONE_TEXT = re.compile(r"^\+?[\d\s().\-/]+$")
_URI_SCHEMES = ("tel:", "sms:", "mailto:", "imessage:", "facetime:")


def handle_key(value: str) -> str | None:
    """The form two handles are compared in, ``None`` when ``value`` is neither a phone
    number nor an e-mail address (``Me``, a name, ``n/a``).

    E-mail: ``e:`` and the address case-folded. Phone: ``+`` and the digits for an
    international number (``+`` or ``00`` in front), else ``n:`` and the digits without
    leading zeros (a number saved without its country code). An extension is dropped.
    """
    text = " ".join(value.split())
    lowered = text.casefold()
    for scheme in _URI_SCHEMES:
        if lowered.startswith(scheme):
            text, lowered = text[len(scheme) :].strip(), lowered[len(scheme) :].strip()
            break
    if "@" in text:
        local, _, domain = lowered.rpartition("@")
        if not local or "." not in domain or " " in lowered or domain.startswith("."):
            return None
        return f"e:{lowered}"
    number = _EXTENSION.sub("", text).strip()
    if number.startswith("+"):
        number = number.replace("(0)", "")  # +44 (0)7700 900123: the 0 is dialled at home only
    if not number or not _PHONE_TEXT.match(number):
        return None
    digits = re.sub(r"\D", "", number)
    if len(digits) < _MIN_PHONE_DIGITS:
        return None
    if number.startswith("+"):
        return f"+{digits}"
    if digits.startswith("00") and len(digits) > 2 + _MIN_PHONE_DIGITS:
        return f"+{digits[2:]}"
    national = digits.lstrip("0")
    return f"n:{national}" if len(national) >= _MIN_PHONE_DIGITS else None


def _digits(key: str) -> str:
    return key[1:] if key.startswith("+") else key[2:]


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- the book -----------------------------------------------------------------------


class ContactBook:
    """Handle -> name. Lookups compare handles by :func:`handle_key`; an entry given
    later replaces an earlier one for the same handle.

    Args:
        entries: ``(handle, name)`` pairs; a handle that is not a phone number or
            e-mail address is refused (``ValueError``), an empty name too.
        files: The contacts files the entries came from (for messages and metadata).
    """

    def __init__(
        self,
        entries: Iterable[tuple[str, str]] = (),
        *,
        files: Sequence[str] = (),
        owner: str = "",
    ) -> None:
        self.files = tuple(files)
        self.owner = _one_line(owner)
        self._names: dict[str, str] = {}
        for handle, name in entries:
            key = handle_key(handle)
            if key is None:
                raise ValueError(f"{handle!r} is not a phone number or e-mail address")
            if not _one_line(name):
                raise ValueError(f"the name for {handle!r} is empty")
            self._names.pop(key, None)  # re-inserted last: a later entry wins
            self._names[key] = _one_line(name)
        self._national = [(k, n) for k, n in self._names.items() if k.startswith("n:")]
        self._international = [(k, n) for k, n in self._names.items() if k.startswith("+")]
        self._looked_up: dict[str, str | None] = {}

    def __len__(self) -> int:
        """How many handles the book names."""
        return len(self._names)

    def __bool__(self) -> bool:
        return bool(self._names) or bool(self.owner)

    def name_for(self, handle: str) -> str | None:
        """The name ``handle`` has in the book, ``None`` when it has none (or when a
        number saved without its country code fits more than one name)."""
        if handle in self._looked_up:
            return self._looked_up[handle]
        key = handle_key(handle)
        name = None if key is None else self._names.get(key)
        if name is None and key is not None and not key.startswith("e:"):
            name = self._by_national_number(key)
        self._looked_up[handle] = name
        return name

    def _by_national_number(self, key: str) -> str | None:
        """The one name whose number, or the handle, is saved without its country code
        and is the end of the other (the longest such match decides)."""
        digits = _digits(key)
        # two international numbers are the same only when equal (looked up already);
        # a handle without a country code may be the end of any number
        candidates = self._national if key.startswith("+") else self._national + self._international
        best, names = 0, set()
        for other, name in candidates:
            shorter, longer = sorted((digits, _digits(other)), key=len)
            if len(shorter) < MIN_NATIONAL_DIGITS or not longer.endswith(shorter):
                continue
            if len(shorter) > best:
                best, names = len(shorter), {name}
            elif len(shorter) == best:
                names.add(name)
        return next(iter(names)) if len(names) == 1 else None

    def label(self, sender: str) -> str:
        """What a transcript calls ``sender``: its name, the owner's name for the
        owner (:data:`~varagity.graph.types.OWNER`, kept when no name is set), or
        ``sender`` as it is (an unknown sender, a handle the book does not name)."""
        if sender == OWNER:
            return self.owner or sender
        return self.name_for(sender) or sender

    def thread_name(self, name: str) -> str:
        """``name`` with each of its comma-separated parts that is a handle the book
        names replaced by the name (a chat with no title is named by its members'
        handles); a titled thread is left as it is."""
        if not self._names:
            return name
        return ", ".join(self.label(part) for part in name.split(", "))

    def named(self) -> dict[str, str]:
        """The handles looked up so far that got a name (handle -> name)."""
        return {h: n for h, n in self._looked_up.items() if n is not None}

    def unnamed(self) -> list[str]:
        """The handles looked up so far that got none (``Me`` and the like left out)."""
        return sorted(
            h for h, n in self._looked_up.items() if n is None and handle_key(h) is not None
        )


# --- reading files ------------------------------------------------------------------


def _decode(path: Path, data: bytes) -> str:
    """The text of a contacts file: UTF-8 (a BOM allowed), or UTF-16 with its BOM."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ContactsError(path, f"not UTF-16 text after its byte-order mark ({exc})") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ContactsError(
            path,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x}); export the contacts as UTF-8",
            line=line,
        ) from exc


def _lines(text: str) -> list[str]:
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# vCard


@dataclass
class _Card:
    begun: int
    names: dict[str, str]  # property -> its first value
    handles: list[tuple[str, int]]


def _split_unescaped(value: str, separator: str) -> list[str]:
    """``value`` split at each ``separator`` not escaped with a backslash."""
    parts, current, escaped = [], [], False
    for char in value:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(
        r"\\(.)", lambda m: "\n" if m.group(1) in "nN" else m.group(1), value, flags=re.DOTALL
    )


def _content_line(line: str) -> tuple[str, list[str], str] | None:
    """(property name, parameters, value) of an unfolded content line; ``None`` when
    it has no ``:`` outside double quotes."""
    quoted = False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == ":" and not quoted:
            head, value = line[:i], line[i + 1 :]
            name, *params = head.split(";")
            return name.strip(), [p.strip() for p in params], value
    return None


def _param(params: list[str], wanted: str) -> str | None:
    """The value of the parameter ``wanted`` (``ENCODING=QUOTED-PRINTABLE``; vCard 2.1
    also writes a bare ``QUOTED-PRINTABLE``)."""
    for param in params:
        key, has_value, value = param.partition("=")
        if has_value and key.strip().upper() == wanted:
            return value.strip().strip('"')
        if not has_value and wanted == "ENCODING" and key.upper() == "QUOTED-PRINTABLE":
            return key
    return None


def _logical_lines(path: Path, text: str) -> Iterator[tuple[int, str]]:
    """(first physical line number, unfolded line) of each content line: a line that
    begins with a space or tab continues the one before it (RFC 6350 3.2), and a
    quoted-printable value ending in ``=`` continues on the next line (vCard 2.1)."""
    current: list[str] = []
    start = 0
    soft_break = False
    for number, line in enumerate(_lines(text), start=1):
        if current and (soft_break or line[:1] in (" ", "\t")):
            if soft_break:
                current[-1] = current[-1][:-1]  # the '=' that broke the line
                current.append(line)
            else:
                current.append(line[1:])
        elif line[:1] in (" ", "\t") and line.strip():
            raise ContactsError(
                path, "a folded continuation line with no content line before it", line=number
            )
        else:
            if current:
                yield start, "".join(current)
            current, start = ([line], number) if line.strip() else ([], number)
        # (the parameters are on a content line's first physical line; a long folded
        # value, a photo's base64, is never joined here line by line)
        soft_break = (
            bool(current)
            and current[-1].endswith("=")
            and "QUOTED-PRINTABLE" in current[0].split(":", 1)[0].upper()
        )
    if current:
        yield start, "".join(current)


def _decode_value(path: Path, params: list[str], value: str, line: int) -> str:
    encoding = (_param(params, "ENCODING") or "").upper()
    if encoding != "QUOTED-PRINTABLE":
        return value
    charset = _param(params, "CHARSET") or "utf-8"
    try:
        return quopri.decodestring(value.encode("ascii", "replace")).decode(charset)
    except (LookupError, UnicodeDecodeError) as exc:
        raise ContactsError(
            path, f"a quoted-printable value that is not {charset} text ({exc})", line=line
        ) from exc


def _card_name(card: _Card) -> str:
    """The name a card gives: FN, else N (given names then family name), else ORG,
    else NICKNAME; empty when it gives none."""
    formatted = _one_line(_unescape(card.names.get("FN", "")))
    if formatted:
        return formatted
    parts = [_unescape(p) for p in _split_unescaped(card.names.get("N", ""), ";")]
    family, given, additional = [*parts, "", "", ""][:3]
    structured = _one_line(" ".join(p.replace(",", " ") for p in (given, additional, family)))
    if structured:
        return structured
    org = _one_line(_unescape(_split_unescaped(card.names.get("ORG", ""), ";")[0]))
    if org:
        return org
    return _one_line(_unescape(_split_unescaped(card.names.get("NICKNAME", ""), ",")[0]))


def parse_vcard(text: str, *, path: Path | str = "contacts.vcf") -> list[NamedHandle]:
    """Each (handle, name) a vCard file gives, in file order: every phone number and
    e-mail address of every card that has a name.

    Raises:
        ContactsError: A line is not a content line, a card is not closed or not
            opened, a ``BEGIN`` is not a vCard's, a ``VERSION`` is unknown, a
            quoted-printable value is not text, or no card names a handle.
    """
    path = Path(path)
    cards: list[_Card] = []
    card: _Card | None = None
    for number, line in _logical_lines(path, text):
        parsed = _content_line(line)
        if parsed is None:
            shown = line if len(line) <= 40 else line[:37] + "..."
            raise ContactsError(
                path,
                f"not a vCard content line (no ':' after a property name): {shown!r}",
                line=number,
            )
        name, params, value = parsed
        prop = name.rpartition(".")[2].upper()  # item1.TEL -> TEL
        if not re.fullmatch(r"[A-Z0-9-]+", prop):
            raise ContactsError(path, f"{name!r} is not a vCard property name", line=number)
        if prop == "BEGIN":
            if value.strip().upper() != "VCARD":
                raise ContactsError(path, f"BEGIN:{value.strip()} is not a vCard", line=number)
            if card is not None:
                raise ContactsError(
                    path,
                    f"BEGIN:VCARD inside the card begun on line {card.begun} "
                    "(is its END:VCARD missing?)",
                    line=number,
                )
            card = _Card(number, {}, [])
            continue
        if card is None and prop == "END":
            raise ContactsError(path, f"END:{value.strip()} with no BEGIN:VCARD", line=number)
        if card is None:
            raise ContactsError(
                path,
                f"{prop} outside a card (before BEGIN:VCARD or after END:VCARD)",
                line=number,
            )
        if prop == "END":
            if value.strip().upper() != "VCARD":
                raise ContactsError(
                    path,
                    f"END:{value.strip()} closes the card begun on line {card.begun}",
                    line=number,
                )
            cards.append(card)
            card = None
            continue
        if prop == "VERSION" and value.strip() not in _VCARD_VERSIONS:
            raise ContactsError(
                path,
                f"VERSION {value.strip()!r} is not a vCard version this reader knows "
                f"({', '.join(_VCARD_VERSIONS)})",
                line=number,
            )
        if prop in ("FN", "N", "ORG", "NICKNAME") and prop not in card.names:
            card.names[prop] = _decode_value(path, params, value, number)
        elif prop in ("TEL", "EMAIL"):
            decoded = _unescape(_decode_value(path, params, value, number)).strip()
            if decoded:
                card.handles.append((decoded, number))
    if card is not None:
        raise ContactsError(path, f"the card begun on line {card.begun} has no END:VCARD")
    named: list[NamedHandle] = []
    nameless = handleless = 0
    for each in cards:
        person = _card_name(each)
        usable = [(h, n) for h, n in each.handles if handle_key(h) is not None]
        if not person:
            nameless += 1
        elif not usable:
            handleless += 1
        else:
            named.extend(NamedHandle(h, person, n) for h, n in usable)
    if not named:
        if not cards:
            raise ContactsError(path, "no vCard in it (no BEGIN:VCARD)")
        raise ContactsError(
            path,
            f"none of its {len(cards)} card(s) gives both a name and a phone number or e-mail "
            f"address ({nameless} without a name, {handleless} without a usable number or "
            "address)",
        )
    return named


# two-column mapping


def _header_order(cells: list[str]) -> tuple[int, int] | None:
    """(handle column, name column) when ``cells`` is a header row (no handle in it,
    and a cell that names a column as :data:`_HANDLE_WORDS` or :data:`_NAME_WORDS` do),
    ``None`` when it is not one."""
    if any(handle_key(cell) is not None for cell in cells):
        return None
    first, second = (cell.strip().casefold() for cell in cells)
    if first in _NAME_WORDS and second in _HANDLE_WORDS:
        return 1, 0
    if first in _HANDLE_WORDS or second in _NAME_WORDS:
        return 0, 1
    return None


def parse_mapping(
    text: str, *, path: Path | str = "contacts.csv", delimiter: str | None = None
) -> list[NamedHandle]:
    """Each (handle, name) row of a two-column mapping, in file order.

    Args:
        text: The file's text.
        path: Its name, for errors.
        delimiter: ``,``, ``;`` or a tab; ``None`` takes the first of them that the
            first row holds (a comma when it holds none).

    Raises:
        ContactsError: A row has not two columns, a handle is not a phone number or
            e-mail address, a name is empty, a handle is named twice differently, or
            the file has no mapping row.
    """
    path = Path(path)
    lines = _lines(text)
    # comment lines become empty ones, so the reader's line numbers stay the file's
    kept = ["" if line.lstrip().startswith("#") else line for line in lines]
    if delimiter is None:
        first = next((line for line in kept if line.strip()), "")
        delimiter = next((d for d in (",", ";", "\t") if d in first), ",")
    reader = csv.reader(kept, delimiter=delimiter, skipinitialspace=True, strict=True)
    order: tuple[int, int] | None = None
    seen: dict[str, tuple[str, int]] = {}
    named: list[NamedHandle] = []
    shown = "tab" if delimiter == "\t" else repr(delimiter)
    rows = 0
    line = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise ContactsError(path, f"not {shown}-separated text ({exc})", line=start) from exc
        line = start
        cells = [cell.strip() for cell in row]
        while cells and not cells[-1]:
            cells.pop()  # a spreadsheet's trailing empty columns
        if not cells:
            continue
        if len(cells) == 1 and handle_key(cells[0]) is not None:
            raise ContactsError(path, f"no name for {cells[0]!r}", line=line)
        if len(cells) != 2:
            columns = "one column" if len(cells) == 1 else f"{len(cells)} columns"
            raise ContactsError(
                path,
                f"{columns} where a row has two, handle and name "
                f"(separated by {shown}; a name that holds one goes in double quotes)",
                line=line,
            )
        rows += 1
        if rows == 1:
            order = _header_order(cells)
            if order is not None:
                continue
        handle_at, name_at = order or (0, 1)
        handle, name = cells[handle_at], _one_line(cells[name_at])
        key = handle_key(handle)
        if key is None:
            raise ContactsError(
                path,
                f"{handle!r} is not a phone number or e-mail address (column {handle_at + 1} "
                "holds the handle, the other the name"
                + ("; a header row names its columns, e.g. handle,name)" if rows == 1 else ")"),
                line=line,
            )
        if not name:
            raise ContactsError(path, f"no name for {handle!r}", line=line)
        earlier = seen.get(key)
        if earlier is not None and earlier[0] != name:
            raise ContactsError(
                path,
                f"{handle!r} is named {name!r} here and {earlier[0]!r} on line {earlier[1]}",
                line=line,
            )
        seen[key] = (name, line)
        named.append(NamedHandle(handle, name, line))
    if not named:
        raise ContactsError(path, "no 'handle, name' row in it")
    return named


def read_contacts(path: Path) -> list[NamedHandle]:
    """The (handle, name) pairs of the contacts file at ``path``, read by its name's
    ending: ``.vcf`` is a vCard file, ``.csv`` and ``.tsv`` a mapping.

    Raises:
        ContactsError: The file cannot be read or used (named, with the line).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ContactsError(path, f"cannot be read ({exc.strerror or exc})") from exc
    text = _decode(path, data)
    suffix = path.suffix.lower()
    if suffix == ".vcf":
        return parse_vcard(text, path=path)
    if suffix in (".csv", ".tsv"):
        return parse_mapping(text, path=path, delimiter="\t" if suffix == ".tsv" else None)
    raise ContactsError(path, "not a contacts file (a .vcf, .csv or .tsv)")


# --- where they are -----------------------------------------------------------------


def _folder_contacts(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [n for n in names if is_contacts_file(n) and (folder / n).is_file()]
    return [folder / n for n in sorted(found, key=lambda n: (CONTACTS_FILES.index(n.lower()), n))]


def contacts_files(root: Path, relative_path: str) -> tuple[Path, ...]:
    """The contacts files that apply to the archive at ``relative_path`` under ``root``
    (``GRAPH_DOCS_PATH``): those in ``root`` and in each folder down to the archive's
    own, in the order they are merged (the farthest first)."""
    relative = PurePosixPath(relative_path)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{relative_path!r} is not a path inside the graph folder")
    folders = [root]
    for part in relative.parts[:-1]:
        folders.append(folders[-1] / part)
    return tuple(path for folder in folders for path in _folder_contacts(folder))


def load_contacts(root: Path, relative_path: str, *, owner: str = "") -> ContactBook:
    """The names the archive at ``relative_path`` under ``root`` gets: every contacts
    file that applies (:func:`contacts_files`) merged, a later file's name winning; an
    empty book when there is none. ``owner`` names the archive's owner
    (``GRAPH_OWNER_NAME``).

    Raises:
        ContactsError: One of the files cannot be read or used.
    """
    paths = contacts_files(root, relative_path)
    entries: list[tuple[str, str]] = []
    for path in paths:
        named = read_contacts(path)
        if path.suffix.lower() == ".vcf":  # a number on two cards keeps the first's name
            first: dict[str, NamedHandle] = {}
            for entry in named:
                first.setdefault(handle_key(entry.handle) or entry.handle, entry)
            named = list(first.values())
        entries.extend((entry.handle, entry.name) for entry in named)
    files = [path.relative_to(root).as_posix() for path in paths]
    return ContactBook(entries, files=files, owner=owner)
