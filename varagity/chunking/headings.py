"""Markdown heading breadcrumbs ("Operations > Dredging") for any offset of a text."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_ATX = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class HeadingIndex:
    """Heading breadcrumbs in force from each heading's offset on."""

    starts: list[int]
    paths: list[str]

    def path_at(self, offset: int) -> str | None:
        """The breadcrumb of the section holding ``offset`` (None before any heading)."""
        i = bisect.bisect_right(self.starts, offset) - 1
        return self.paths[i] if i >= 0 else None


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    marks = [m.start() for m in _FENCE.finditer(text)]
    return [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]


def heading_index(text: str) -> HeadingIndex:
    """Index the ATX headings of a Markdown text (ignoring fenced code blocks)."""
    fences = _fenced_ranges(text)
    stack: list[tuple[int, str]] = []
    starts: list[int] = []
    paths: list[str] = []
    for match in _ATX.finditer(text):
        if any(a <= match.start() < b for a, b in fences):
            continue
        level = len(match.group(1))
        title = re.sub(r"[*_`]", "", match.group(2)).strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append(match.start())
        paths.append(" > ".join(t for _, t in stack))
    return HeadingIndex(starts, paths)
