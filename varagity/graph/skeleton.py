"""The graph's skeleton: who wrote in which conversation on which day, read straight
from the archives, with no model in the loop.

What the LLM extracts from a day (places, events, things) is only as good as a small
model's reading of it: a build once left out a person named in every message. The
people who wrote, the conversations and the days they wrote on are facts of the
archive itself, so they are taken from the build manifest (each transcript day's
thread and writers, :mod:`varagity.graph.manifest`) and stand in the graph whatever the
extraction made of that day:

* a **person** for every writer (a handle, or the name a contacts file gives it, or
  "Me"), described by the conversations and days they wrote in and who with;
* a **conversation** for every thread, described by its members and its days;
* a "wrote in" relation from each person to each conversation they wrote in, and a
  "wrote with" relation between two people who wrote in one conversation on one day,
  each holding those days (so retrieval can cite them).

Days are not entities of their own: every relation holds its days, and each day is a
transcript the engine cites. The skeleton is rebuilt from the manifest on every read,
so it is never out of step with what the engine holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property

from varagity.generation.quotes import JOINED_NAME
from varagity.graph.base import EntitySummary, Neighbourhood
from varagity.graph.manifest import ManifestEntry
from varagity.graph.transcripts import weekday_of
from varagity.graph.types import (
    GraphEntity,
    GraphRelation,
    GraphRetrieval,
    doc_key_for,
    split_doc_key,
)

#: Entity types of the skeleton (the extraction's ``Person`` and a type of its own).
PERSON = "Person"
CONVERSATION = "Conversation"

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


@dataclass(frozen=True)
class Presence:
    """One person writing in one conversation on one day."""

    person: str
    thread_id: str
    thread_name: str
    span: str

    @property
    def doc_key(self) -> str:
        return doc_key_for(self.thread_id, self.span)


@dataclass(frozen=True)
class Skeleton:
    """Every (writer, conversation, day) the graph holds."""

    presences: tuple[Presence, ...]

    @classmethod
    def of(cls, manifest: Mapping[str, ManifestEntry]) -> Skeleton:
        """The skeleton of the days ``manifest`` records (a day recorded without its
        writers, by a build before they were kept, adds none)."""
        presences = []
        for key in sorted(manifest):
            entry = manifest[key]
            thread_id = split_doc_key(key)[0]
            for person in entry.senders:
                presences.append(Presence(person, thread_id, entry.thread_name, entry.span))
        return cls(tuple(presences))

    def conversation(self, presence: Presence) -> str:
        """The conversation entity's name: the thread's name on its latest day (a
        renamed group goes by its new name), unless a person has it (a one-to-one chat
        is named after its member), then "<name> (conversation)"."""
        name = self._latest_names.get(presence.thread_id) or presence.thread_id
        return f"{name} (conversation)" if name in self._people else name

    @cached_property
    def _latest_names(self) -> dict[str, str]:
        return {p.thread_id: p.thread_name for p in self.presences}  # by day, in order

    @cached_property
    def _people(self) -> frozenset[str]:
        return frozenset(self.people)

    @cached_property
    def writers(self) -> dict[str, frozenset[str]]:
        """Who wrote on each day (its doc key)."""
        days: dict[str, set[str]] = {}
        for p in self.presences:
            days.setdefault(p.doc_key, set()).add(p.person)
        return {key: frozenset(people) for key, people in days.items()}

    @cached_property
    def people(self) -> list[str]:
        """Every writer, in order of first appearance."""
        return list(dict.fromkeys(p.person for p in self.presences))

    def named_in(self, question: str) -> list[str]:
        """The writers ``question`` names: the whole name, or a word of it of three
        letters or more (a first name), as whole words, ignoring case; or the whole name
        written as one word ("JakeWatson", "ChaeSong-hwa": a handle)."""
        asked = {w.casefold() for w in _WORD.findall(question)}
        text = " ".join(_WORD.findall(question)).casefold()
        squashed = "".join(_WORD.findall(question)).casefold()
        named = []
        for person in self.people:
            # an e-mail address's domain ("icloud.com") names nobody
            words = [w.casefold() for w in _WORD.findall(person.split("@", 1)[0])]
            whole = " ".join(w.casefold() for w in _WORD.findall(person))
            joined = whole.replace(" ", "")
            if whole and (
                re.search(rf"\b{re.escape(whole)}\b", text)
                or any(len(w) >= 3 and w in asked for w in words if not w.isdigit())
                or (" " in whole and len(joined) >= JOINED_NAME and joined in squashed)
            ):
                named.append(person)
        return named

    def entities(self, people: Iterable[str] | None = None) -> list[GraphEntity]:
        """The person entities of ``people`` (default: all) and the conversations they
        wrote in."""
        wanted = set(self.people if people is None else people)
        out: list[GraphEntity] = []
        threads: dict[str, list[Presence]] = {}
        for p in self.presences:
            threads.setdefault(p.thread_id, []).append(p)
        for person in self.people:
            if person not in wanted:
                continue
            mine = [p for p in self.presences if p.person == person]
            out.append(
                GraphEntity(
                    name=person,
                    type=PERSON,
                    description=self._describe_person(person, mine),
                    doc_keys=tuple(dict.fromkeys(p.doc_key for p in mine)),
                )
            )
        for rows in threads.values():
            if not wanted & {p.person for p in rows}:
                continue
            members = list(dict.fromkeys(p.person for p in rows))
            days = sorted({p.span for p in rows})
            out.append(
                GraphEntity(
                    name=self.conversation(rows[-1]),
                    type=CONVERSATION,
                    description=(
                        f"A conversation of {_enumerate(members)}, with messages on {_days(days)}."
                    ),
                    doc_keys=tuple(dict.fromkeys(p.doc_key for p in rows)),
                )
            )
        return out

    def relations(self, people: Iterable[str] | None = None) -> list[GraphRelation]:
        """The "wrote in" and "wrote with" relations of ``people`` (default: all)."""
        wanted = set(self.people if people is None else people)
        wrote_in: dict[tuple[str, str], list[Presence]] = {}
        by_day: dict[str, list[Presence]] = {}
        for p in self.presences:
            by_day.setdefault(p.doc_key, []).append(p)
            if p.person in wanted:
                wrote_in.setdefault((p.person, p.thread_id), []).append(p)
        out = [
            GraphRelation(
                source=person,
                target=self.conversation(rows[-1]),
                description=f"{person} wrote in {self.conversation(rows[-1])} "
                f"on {_days(sorted({r.span for r in rows}))}.",
                keywords="wrote in",
                weight=float(len(rows)),
                doc_keys=tuple(r.doc_key for r in rows),
            )
            for (person, _), rows in wrote_in.items()
        ]
        together: dict[tuple[str, str], list[str]] = {}
        for key, rows in by_day.items():
            names = sorted({r.person for r in rows})
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    if a in wanted or b in wanted:
                        together.setdefault((a, b), []).append(key)
        for (a, b), keys in together.items():
            spans = sorted({split_doc_key(k)[1] for k in keys})
            out.append(
                GraphRelation(
                    source=a,
                    target=b,
                    description=f"{a} and {b} wrote to each other on {_days(spans)}.",
                    keywords="wrote with",
                    weight=float(len(keys)),
                    doc_keys=tuple(keys),
                )
            )
        return out

    def summaries(self, query: str | None = None) -> list[EntitySummary]:
        """The skeleton's entities whose name contains ``query`` (ignoring case), as the
        graph view lists them, each with its number of relations."""
        relations = self.relations()
        out = []
        for entity in self.entities():
            if query and query.casefold() not in entity.name.casefold():
                continue
            degree = sum(1 for r in relations if entity.name in (r.source, r.target))
            out.append(
                EntitySummary(entity.name, entity.type, entity.description, degree, entity.doc_keys)
            )
        return out

    def neighbourhood(self, name: str) -> Neighbourhood | None:
        """A person's or conversation's entity with the entities and relations one hop
        away (the graph view); None when the skeleton has no entity of that name."""
        entities = {e.name: e for e in self.entities()}
        center = entities.get(name) or next(
            (e for e in entities.values() if e.name.casefold() == name.casefold()), None
        )
        if center is None:
            return None
        relations = tuple(r for r in self.relations() if center.name in (r.source, r.target))
        near = {center.name} | {r.source for r in relations} | {r.target for r in relations}
        return Neighbourhood(
            center=center.name,
            entities=tuple(e for e in entities.values() if e.name in near),
            relations=relations,
        )

    def _describe_person(self, person: str, mine: list[Presence]) -> str:
        threads = list(dict.fromkeys(self.conversation(p) for p in mine))
        spans = sorted({p.span for p in mine})
        days = {p.doc_key for p in mine}
        others = sorted(
            {p.person for p in self.presences if p.doc_key in days and p.person != person}
        )
        text = f"Wrote in {_enumerate(threads)} on {_days(spans)}"
        return text + (f", with {_enumerate(others)}." if others else ".")


def with_skeleton(found: GraphRetrieval, skeleton: Skeleton, question: str) -> GraphRetrieval:
    """``found`` with the skeleton of the people ``question`` names: their person and
    conversation entities and relations first (what the extraction made of them
    follows), and the days they wrote on before the others (the days all of them wrote
    on first), retrieval's order kept within each. Unchanged when it names nobody."""
    named = skeleton.named_in(question)
    if not named:
        return found
    extracted = {e.name.casefold() for e in found.entities}
    entities = [e for e in skeleton.entities(named) if e.name.casefold() not in extracted]
    wrote, asked = skeleton.writers, set(named)
    days = sorted(found.days, key=lambda d: -len(wrote.get(d.doc_key, frozenset()) & asked))
    return replace(
        found,
        entities=(*entities, *found.entities),
        relations=(*skeleton.relations(named), *found.relations),
        days=tuple(days),
    )


def _enumerate(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    if len(items) > 6:
        return ", ".join(items[:6]) + f" and {len(items) - 6} more"
    return ", ".join(items[:-1]) + " and " + items[-1]


def _days(spans: list[str]) -> str:
    """``spans`` named for a reader: one day with its weekday, a few listed, many as a
    count with the first and last."""
    if len(spans) == 1:
        return weekday_of(spans[0])
    if len(spans) <= 3:
        return _enumerate([weekday_of(s) for s in spans])
    return f"{len(spans)} days from {weekday_of(spans[0])} to {weekday_of(spans[-1])}"
