"""Following a job until it is done: one loop, for the API's event streams and the
command line's ``--wait``.

:func:`follow` re-reads a state every ``poll_s`` and yields it whenever it changed (by
``key``), ending with the first state that is ``done`` (always yielded); ``stop`` ends
it early (a client that went away). :func:`follow_blocking` runs the same loop for a
caller without an event loop, over a blocking ``read``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import TypeVar

S = TypeVar("S")

_UNSEEN = object()


def _same(state: object) -> object:
    return state


async def follow(
    read: Callable[[], Awaitable[S]],
    *,
    done: Callable[[S], bool],
    poll_s: float,
    first: S | None = None,
    key: Callable[[S], object] = _same,
    stop: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncGenerator[S, None]:
    """The states of a job as ``read`` reads them, starting with ``first`` (read when
    None): each one whose ``key`` differs from the last yielded, then the first that is
    ``done``. Between reads it waits ``poll_s`` seconds and asks ``stop``, which ends
    the loop when true. What ``read`` raises ends it too."""
    state = await read() if first is None else first
    sent: object = _UNSEEN
    while True:
        if done(state):
            yield state
            return
        seen = key(state)
        if seen != sent:
            yield state
            sent = seen
        await asyncio.sleep(poll_s)
        if stop is not None and await stop():
            return
        state = await read()


def follow_blocking(
    read: Callable[[], S],
    *,
    done: Callable[[S], bool],
    poll_s: float,
    key: Callable[[S], object] = _same,
) -> Iterator[S]:
    """:func:`follow` over a blocking ``read``, for a caller without an event loop (the
    command line): the loop runs on an event loop of its own, one step per state."""

    async def read_now() -> S:
        return read()

    async def next_state() -> S:
        return await anext(states)

    loop = asyncio.new_event_loop()
    states = follow(read_now, done=done, poll_s=poll_s, key=key)
    step: asyncio.Task[S] | None = None
    try:
        while True:
            step = loop.create_task(next_state())
            try:
                yield loop.run_until_complete(step)
            except StopAsyncIteration:
                return
    finally:
        if step is not None and not step.done():  # Ctrl-C between polls: stop the step
            step.cancel()
            loop.run_until_complete(asyncio.wait([step]))
        loop.run_until_complete(states.aclose())
        loop.close()
