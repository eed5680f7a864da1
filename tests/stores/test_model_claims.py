"""The cross-process claims on the chat model (``model_claims``) on a real Postgres.

Two :class:`ModelClaims` over two separate stores stand for two processes (the API and
a run worker, possibly on other hosts): all they share is the database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from varagity.chat.queue import CONTEXT, AnswerQueue, ModelTurn, Wait
from varagity.stores.model_claims import ModelClaims, Throttled
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration

MODEL = "http://llm.test:8080/v1"


@pytest.fixture
def stores(pg_url: str) -> Iterator[tuple[PgVectorStore, PgVectorStore]]:
    """Two stores on one database: two processes' connection pools."""
    api, worker = (PgVectorStore(pg_url, embedding_dim=8) for _ in range(2))
    try:
        yield api, worker
    finally:
        api.close()
        worker.close()


def _until(check: object, limit: float = 30.0) -> bool:
    """Poll ``check`` (a callable) until it is true or ``limit`` seconds pass."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_claim_is_seen_by_another_process_until_released(
    stores: tuple[PgVectorStore, PgVectorStore],
) -> None:
    api = ModelClaims(stores[0].connection, MODEL)
    worker = ModelClaims(stores[1].connection, MODEL)
    assert worker.live("turn") == 0 and api.live("blurb") == 0
    with api.holding("turn") as claim:
        assert worker.live("turn") == 1
        assert worker.live("blurb") == 0  # kinds are apart
        assert api.live("turn", others_than=claim) == 0
        # a claim held longer than max_age is not counted (leaked by its holder)
        assert worker.live("turn", max_age=3600) == 1 and worker.live("turn", max_age=0) == 0
        with worker.holding("blurb"):
            assert api.live("blurb") == 1 and api.live("turn") == 1
        assert api.live("blurb") == 0
        # another model's claims are another model's business
        assert ModelClaims(stores[1].connection, "http://other:1/v1").live("turn") == 0
    assert worker.live("turn") == 0 and api.held == 0
    api.release(claim)  # releasing twice is harmless


def test_an_unrenewed_claim_expires_and_a_held_one_is_renewed(
    stores: tuple[PgVectorStore, PgVectorStore],
) -> None:
    """A process that died stops renewing: its claim runs out with the lease. A live
    one renews it from its background thread, however long it holds it."""
    lease, renew = 1.0, 0.2
    holder = ModelClaims(stores[0].connection, MODEL, lease_seconds=lease, renew_seconds=renew)
    watcher = ModelClaims(stores[1].connection, MODEL)
    kept = holder.claim("turn")
    dead = ModelClaims(stores[0].connection, MODEL, lease_seconds=lease, renew_seconds=renew)
    lost = dead.claim("turn")
    with dead._lock:  # the dead process's renewer stops as if the process were gone
        dead._held.clear()
    assert watcher.live("turn") == 2
    assert _until(lambda: watcher.live("turn") == 1), "the dead process's claim never expired"
    # several leases later, the live process's claim is still there
    deadline = time.monotonic() + 4 * lease
    while time.monotonic() < deadline:
        assert watcher.live("turn") == 1
        time.sleep(renew)
    holder.release(kept)
    assert watcher.live("turn") == 0
    with stores[0].connection() as conn:
        ids = {r[0] for r in conn.execute("SELECT claim_id FROM model_claims").fetchall()}
    assert kept not in ids and lost in ids  # expired rows linger until a claim purges them


def test_renewing_more_slowly_than_the_lease_is_refused(
    stores: tuple[PgVectorStore, PgVectorStore],
) -> None:
    with pytest.raises(ValueError):
        ModelClaims(stores[0].connection, MODEL, lease_seconds=1.0, renew_seconds=1.0)


def test_a_turn_claims_the_model_and_waits_while_a_blurb_holds_it(
    stores: tuple[PgVectorStore, PgVectorStore],
) -> None:
    """A turn (API process) claims the model while it waits; a blurb request under way
    in a worker keeps it reporting ``context`` until the worker lets go."""
    api = ModelClaims(stores[0].connection, MODEL)
    worker = ModelClaims(stores[1].connection, MODEL)
    blurb = worker.claim("blurb")
    turn = ModelTurn(AnswerQueue(1), api)
    waits: list[Wait] = []
    entered = threading.Event()

    def ask() -> None:
        for wait in turn.enter(heartbeat=None):
            waits.append(wait)
        entered.set()

    asking = threading.Thread(target=ask)
    asking.start()
    # the worker sees the turn's claim (what makes a blurb pass give way)
    assert _until(lambda: worker.live("turn") == 1)
    # the turn reports that it waits for the blurb, and keeps waiting
    assert _until(lambda: waits == [Wait(1, CONTEXT)])
    assert not entered.is_set()
    worker.release(blurb)
    asking.join(30)
    assert entered.is_set() and waits == [Wait(1, CONTEXT)]
    assert worker.live("turn") == 1  # held while the answer is generated
    turn.leave()
    assert worker.live("turn") == 0 and turn.line.waiting == 0


def test_a_turn_that_leaves_while_waiting_drops_its_claim(
    stores: tuple[PgVectorStore, PgVectorStore],
) -> None:
    api = ModelClaims(stores[0].connection, MODEL)
    line = AnswerQueue(1)
    assert list(line.enter()) == []  # another chat answers
    waiting = ModelTurn(line, api).enter(heartbeat=None)
    assert next(waiting) == Wait(1, "answers")
    assert api.live("turn") == 1
    waiting.close()  # the client went away
    assert api.live("turn") == 0 and line.waiting == 0
    line.leave()


def test_without_claims_a_turn_keeps_only_the_line() -> None:
    turn = ModelTurn(AnswerQueue(1), None)
    assert list(turn.enter()) == []
    turn.leave()


def test_throttled_asks_again_only_after_its_interval() -> None:
    answers = iter([True, False])
    calls: list[int] = []

    def ask() -> bool:
        calls.append(1)
        return next(answers)

    throttled = Throttled(ask, interval=3600)
    assert throttled() and throttled() and len(calls) == 1
    throttled.interval = 0
    assert not throttled() and len(calls) == 2


def test_the_renewer_stops_when_its_store_closes(pg_url: str) -> None:
    """A process that closes its store (shutdown) stops renewing instead of logging a
    failure every few seconds; its claims run out with their lease."""
    store = PgVectorStore(pg_url, embedding_dim=8)
    claims = ModelClaims(store.connection, MODEL, lease_seconds=1.0, renew_seconds=0.1)
    claims.claim("turn")
    renewer = claims._renewer
    assert renewer is not None and renewer.is_alive()
    store.close()
    renewer.join(10)
    assert not renewer.is_alive() and claims.held == 0
