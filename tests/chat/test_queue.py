"""The answer queue: FIFO places in line, reported as they change; a waiter that gives
up leaves the line."""

from __future__ import annotations

import threading

from varagity.chat.queue import AnswerQueue


def _waiter(
    line: AnswerQueue, seen: list[int], entered: threading.Event, done: threading.Event
) -> None:
    for position in line.enter():
        seen.append(position)
        entered.set()
    seen.append(0)  # 0: got the slot
    done.wait(10)  # generating
    line.leave()


def test_waiters_learn_their_place_and_move_up_in_order() -> None:
    line = AnswerQueue(1)
    assert list(line.enter()) == []  # a free slot: no waiting at all
    first_seen: list[int] = []
    second_seen: list[int] = []
    first_in, second_in = threading.Event(), threading.Event()
    first_done, second_done = threading.Event(), threading.Event()
    first = threading.Thread(target=_waiter, args=(line, first_seen, first_in, first_done))
    first.start()
    assert first_in.wait(10)
    second = threading.Thread(target=_waiter, args=(line, second_seen, second_in, second_done))
    second.start()
    assert second_in.wait(10)
    assert first_seen == [1] and second_seen == [2] and line.waiting == 2
    line.leave()  # the holder is done: the first waiter gets it, the second moves up
    for _ in range(100):
        if second_seen == [2, 1]:
            break
        threading.Event().wait(0.05)
    assert first_seen == [1, 0] and second_seen == [2, 1]
    first_done.set()
    first.join(10)
    second_done.set()
    second.join(10)
    assert second_seen == [2, 1, 0]
    assert line.waiting == 0 and list(line.enter()) == []


def test_a_waiter_that_gives_up_leaves_the_line() -> None:
    line = AnswerQueue(1)
    assert list(line.enter()) == []
    waiting = line.enter()
    assert next(waiting) == 1 and line.waiting == 1
    waiting.close()  # the client went away
    assert line.waiting == 0
    line.leave()
    assert list(line.enter()) == []  # the slot is free again, nobody was skipped


def test_a_heartbeat_repeats_an_unchanged_place() -> None:
    """With a heartbeat the waiter hears its place again while the line does not move,
    so the route in front of it gets a chance to see that its client left."""
    line = AnswerQueue(1)
    assert list(line.enter()) == []
    waiting = line.enter(heartbeat=0.2)
    assert [next(waiting), next(waiting), next(waiting)] == [1, 1, 1]
    waiting.close()
    assert line.waiting == 0
