"""The answer queue: at most ``LLM_CONCURRENCY`` answers generate at once per process,
the rest wait first in, first out and know their place.

The packaged llama.cpp server generates one completion at a time, so a second chat
would otherwise sit silently inside the model server until the first is done (and a
client's timeout might end it). Holding the line here instead lets the turn runner tell
the client in-band that it is queued, and at which position, while it waits.

Only this process's chats are counted: blurb runs of the ingest (another process) also
use the model, so a turn at position 1 may still wait a little inside the model server.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Generator

# How often a waiting turn wakes to look for a changed position.
POLL_SECONDS = 0.5


class AnswerQueue:
    """A FIFO gate of ``slots`` concurrent answers."""

    def __init__(self, slots: int) -> None:
        """A gate letting ``slots`` (at least 1) answers generate at once."""
        self.slots = max(1, slots)
        self._cond = threading.Condition()
        self._busy = 0
        self._waiting: deque[object] = deque()

    @property
    def waiting(self) -> int:
        """How many turns wait now."""
        with self._cond:
            return len(self._waiting)

    def enter(self, heartbeat: float | None = None) -> Generator[int, None, None]:
        """Wait for a slot, yielding the 1-based queue position whenever it changes.

        Yields nothing when a slot is free at once. With ``heartbeat``, the position is
        also yielded again after that many seconds without a change, so a consumer that
        only looks at its client between events (an SSE route) notices one that went
        away while the line does not move. When the generator finishes, the caller holds
        a slot and must :meth:`leave`; closed early (the client went away), it holds none
        and its place in line is given up.
        """
        ticket = object()
        with self._cond:
            if self._busy < self.slots and not self._waiting:
                self._busy += 1
                return
            self._waiting.append(ticket)
        acquired = False
        try:
            reported, reported_at = 0, 0.0
            while True:
                with self._cond:
                    position = self._waiting.index(ticket) + 1
                    if position == 1 and self._busy < self.slots:
                        self._waiting.popleft()
                        self._busy += 1
                        acquired = True
                        self._cond.notify_all()  # the others move up
                        return
                    due = heartbeat is not None and time.monotonic() - reported_at >= heartbeat
                    if position == reported and not due:
                        self._cond.wait(POLL_SECONDS)
                        continue
                reported, reported_at = position, time.monotonic()
                yield position
        finally:
            if not acquired:
                with self._cond:
                    if ticket in self._waiting:
                        self._waiting.remove(ticket)
                    self._cond.notify_all()

    def leave(self) -> None:
        """Give back the slot :meth:`enter` granted."""
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


_lock = threading.Lock()
_queues: dict[tuple[str, int], AnswerQueue] = {}


def answer_queue(model_url: str, slots: int) -> AnswerQueue:
    """The process's queue in front of the chat model at ``model_url``."""
    with _lock:
        return _queues.setdefault((model_url, slots), AnswerQueue(slots))
