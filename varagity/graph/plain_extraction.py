"""An extraction reply written without a model, from the transcript alone.

``GRAPH_EXTRACTION=skeleton`` answers the engine's extraction prompt for a transcript
day with what can be read off the transcript with certainty: the people who wrote
that day, the day itself, and the names the messages write (runs of capitalised words
such as "Tbilisi Corner" or "Chinese Lunar New Year", a capitalised word inside a
sentence such as "Lisbon", and quoted titles such as "Overwatch 3"); relations say who
wrote on the day, which names were mentioned that day, and who wrote about which name.
The reply has the shape of LightRAG's JSON extraction, so the engine stores it as it
stores a model's (entities, relations, their source days, vectors) and deletes,
rebuilds and retrieves it the same way.

Descriptions are the same for every day ("Noor Haddad, who writes in the
conversations"), so LightRAG's merge keeps one and never asks the model to summarise
what many days said of a person. What this costs: no events, places or things that
are not capitalised, and no descriptions of what was said; what it buys: a day costs
the embedding of its chunk, not a 15-25 s generation by the 0.5B model on two cores
(docs/graph.md has the measurements).
"""

from __future__ import annotations

import re
from typing import Any

from varagity.generation.grounding import STOPWORDS
from varagity.graph.transcripts import MESSAGE_LINE

_CAPITALISED = r"[A-Z][\w'’&.-]*[\w]|[A-Z]"
#: A run of capitalised words (with "of", "the", "and", "&", "de" inside, and a number
#: after: "Overwatch 3", "Bank of Ireland", "Crumb & Co"; "Sara and Ingrid" are two).
_RUN = re.compile(
    rf"(?:{_CAPITALISED})(?:\s+(?:(?:of|the|de|&)\s+)?(?:{_CAPITALISED}))*(?:\s+\d+\b)?"
)
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,60})[\"”]")
_SENTENCE_START = re.compile(r"(?:^|[.!?…]\s+|[:;]\s+|\n)\W*$")
#: Capitalised words that name nothing: greetings, pronouns, calendar words.
_COMMON = frozenset(
    """i i'm i'll i've i'd a an the this that these those it its it's he she we they you
    my your our their me us him her them hey hi hello hiya yo dear ok okay oh ah wow yes
    no yeah yep nope sure thanks thank please sorry great good nice cool awesome perfect
    just so and but or if then also what when where why how who which well let let's lol
    haha happy merry congrats congratulations morning evening night today tomorrow
    tonight yesterday monday tuesday wednesday thursday friday saturday sunday january
    february march april may june july august september october november december
    mr mrs ms dr am pm""".split()
)
PERSON = "Person"
DATE = "Date"
NAME = "Other"


def _clean(name: str) -> str:
    words = name.split()
    while words and words[0].casefold() in _COMMON | STOPWORDS:
        words = words[1:]
    while words and words[-1].casefold() in _COMMON | {"of", "the", "de", "&"}:
        words = words[:-1]
    return " ".join(words).strip(" .,'’-")


def names_in(text: str) -> list[str]:
    """The names ``text`` (one message) writes, in order, without repeats: quoted
    titles, runs of capitalised words, and single capitalised words that do not open a
    sentence (a sentence's first word is capitalised whatever it is)."""
    found: list[str] = []
    for match in _QUOTED.finditer(text):
        found.append(match[1].strip())
    for match in _RUN.finditer(text):
        raw = match[0]
        starts = bool(_SENTENCE_START.search(text[: match.start()]))
        name = _clean(raw)
        if not any(c.isalpha() for c in name):  # "Saturday May 11" is a date
            continue
        if " " not in name and (starts or name.casefold() in _COMMON):
            continue
        if name.isupper() and len(name) <= 1:
            continue
        found.append(name)
    seen: set[str] = set()
    out = []
    for name in found:
        key = name.casefold()
        if key not in seen and key not in _COMMON:
            seen.add(key)
            out.append(name)
    return out


def plain_extraction(lines: str, *, thread: str = "", day: str | None = None) -> dict[str, Any]:
    """The extraction reply for a transcript's ``lines``, of ``thread`` on ``day`` (as
    the engine's caption names them, ``Monday 2026-03-02``); without a day (the second
    chunk of a long day, which has no caption) its writers and names hang on each other
    and the day's first chunk links them to the day."""
    writers: list[str] = []
    spoken: dict[str, list[str]] = {}  # name -> who wrote it
    for line in lines.splitlines():
        m = MESSAGE_LINE.match(line.strip())
        sender = m["sender"].strip() if m else ""
        if m is None or not sender:
            continue
        if sender not in writers:
            writers.append(sender)
        for name in names_in(m["text"]):
            spoken.setdefault(name, [])
            if sender not in spoken[name]:
                spoken[name].append(sender)
    # a first name of one of the day's writers is that writer ("Sara" of "Sara Lindqvist")
    first = {w.split()[0].casefold(): w for w in writers if " " in w}
    people = {w.casefold() for w in writers}
    entities: list[dict[str, str]] = [
        {"name": w, "type": PERSON, "description": f"{w}, who writes in the conversations"}
        for w in writers
    ]
    relationships: list[dict[str, Any]] = []
    if day is not None:
        entities.append({"name": day, "type": DATE, "description": "A day of the conversations"})
        relationships.extend(
            {
                "source": w,
                "target": day,
                "keywords": "wrote",
                "description": f"{w} wrote in {thread} on {day}",
            }
            for w in writers
        )
    for name, by in spoken.items():
        target = first.get(name.casefold(), name)
        if target.casefold() not in people:  # a writer wrote that day already
            people.add(target.casefold())
            entities.append(
                {"name": target, "type": NAME, "description": f"{target}, named in the messages"}
            )
        if day is not None and target not in writers:
            relationships.append(
                {
                    "source": target,
                    "target": day,
                    "keywords": "mentioned",
                    "description": f"{target} is mentioned in {thread} on {day}",
                }
            )
        relationships.extend(
            {
                "source": sender,
                "target": target,
                "keywords": "wrote about",
                "description": f"{sender} wrote about {target}",
            }
            for sender in by
            if sender != target
        )
    return {"entities": entities, "relationships": relationships}
