"""The ``model_claims`` table: who uses or wants the chat model, across processes and hosts.

One llama.cpp server answers one completion at a time, and two kinds of callers share
it: chat turns (the API process) and contextualization blurbs (Dagster run workers,
possibly on other hosts). The only thing they share is Postgres, so each says what it
does there:

* a turn **claims** the model (kind ``"turn"``) from the moment it is ready to generate
  until its answer ends: blurb passes see the claim, cut the blurb under way and wait;
* a blurb request under way **holds** the model (kind ``"blurb"``): a turn that finds
  such a claim knows it waits for search-context work, and tells its client so.

A claim is a row with a lease: the process that holds it renews ``expires_at`` every
:data:`RENEW_SECONDS` from a background thread (one per :class:`ModelClaims`), so the
claims of a process or host that died (or lost Postgres) expire by themselves within
:data:`LEASE_SECONDS`. Time is the database's clock, never a host's, so hosts need not
agree on the time. Claims are keyed by the model server's URL (``LLM_BASE_URL``): two
processes share a model when they are configured with the same URL.

Ordering: each side writes its own claim first and reads the other side's after
(two autocommitted statements), so when a turn and a blurb start together at least one
sees the other: either the blurb does not start, or the turn knows it waits for it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Literal

import psycopg
from psycopg_pool import PoolClosed

log = logging.getLogger(__name__)

#: What a claim stands for: a chat turn that wants the model, a blurb request using it.
ClaimKind = Literal["turn", "blurb"]

#: A claim not renewed for this long is void (its process or host is gone).
LEASE_SECONDS = 15.0
#: How often a holding process pushes its claims' expiry out again.
RENEW_SECONDS = 4.0
#: Rows expired for longer than this are deleted when a new claim is made.
_PURGE_AFTER_SECONDS = 60.0

Connect = Callable[[], AbstractContextManager[psycopg.Connection]]


class ModelClaims:
    """The claims on one chat model (``model``: its URL) over a Postgres connection source.

    Thread-safe; one instance serves a whole process (the API's turns, a run worker's
    blurb pass). ``connect`` is a pooled connection factory such as
    :meth:`PgVectorStore.connection <varagity.stores.vector_store.PgVectorStore.connection>`.
    """

    def __init__(
        self,
        connect: Connect,
        model: str,
        *,
        lease_seconds: float = LEASE_SECONDS,
        renew_seconds: float = RENEW_SECONDS,
    ) -> None:
        """Claims on ``model`` through connections from ``connect``."""
        if renew_seconds >= lease_seconds:
            raise ValueError("claims must be renewed more often than their lease runs out")
        self.connect = connect
        self.model = model
        self.lease_seconds = lease_seconds
        self.renew_seconds = renew_seconds
        self.holder = f"{socket.gethostname()}:{os.getpid()}"
        self._held: set[uuid.UUID] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._renewer: threading.Thread | None = None

    def _execute(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        with self.connect() as conn:
            cur = conn.execute(sql, params)
            rows = cur.fetchall() if cur.description else []
            conn.commit()
            return rows

    def claim(self, kind: ClaimKind) -> uuid.UUID:
        """Register a claim of ``kind``; it stays live (renewed) until :meth:`release`."""
        claim_id = uuid.uuid4()
        self._execute(
            "WITH purged AS (DELETE FROM model_claims"
            " WHERE expires_at < clock_timestamp() - make_interval(secs => %s))"
            " INSERT INTO model_claims (claim_id, model, kind, holder, expires_at)"
            " VALUES (%s, %s, %s, %s, clock_timestamp() + make_interval(secs => %s))",
            (_PURGE_AFTER_SECONDS, claim_id, self.model, kind, self.holder, self.lease_seconds),
        )
        with self._lock:
            self._held.add(claim_id)
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(
                    target=self._renew, name="model-claims-renewer", daemon=True
                )
                self._renewer.start()
            self._wake.notify_all()
        return claim_id

    def release(self, claim_id: uuid.UUID) -> None:
        """Drop a claim (idempotent). A failure to reach Postgres is logged, not raised:
        the claim then expires with its lease."""
        with self._lock:
            self._held.discard(claim_id)
        try:
            self._execute("DELETE FROM model_claims WHERE claim_id = %s", (claim_id,))
        except psycopg.Error:
            log.warning("could not release model claim %s; it expires with its lease", claim_id)

    @contextmanager
    def holding(self, kind: ClaimKind) -> Iterator[uuid.UUID]:
        """A claim of ``kind`` for the ``with`` block."""
        claim_id = self.claim(kind)
        try:
            yield claim_id
        finally:
            self.release(claim_id)

    def live(
        self,
        kind: ClaimKind,
        *,
        others_than: uuid.UUID | None = None,
        max_age: float | None = None,
    ) -> int:
        """How many unexpired claims of ``kind`` there are on this model (every process,
        every host), not counting ``others_than`` nor, with ``max_age``, claims made
        longer ago than that many seconds (a holder that leaked one keeps renewing it)."""
        rows = self._execute(
            "SELECT count(*) FROM model_claims WHERE model = %s AND kind = %s"
            " AND expires_at > clock_timestamp() AND claim_id IS DISTINCT FROM %s"
            " AND (%s::float8 IS NULL"
            "  OR claimed_at > clock_timestamp() - make_interval(secs => %s::float8))",
            (self.model, kind, others_than, max_age, max_age),
        )
        return int(rows[0][0])  # type: ignore[call-overload]

    @property
    def held(self) -> int:
        """How many claims this instance holds now."""
        with self._lock:
            return len(self._held)

    def _renew(self) -> None:
        """Push the held claims' expiry out every ``renew_seconds`` while there are any."""
        while True:
            with self._lock:
                if not self._held:
                    self._renewer = None
                    return
                held = list(self._held)
            try:
                self._execute(
                    "UPDATE model_claims"
                    " SET expires_at = clock_timestamp() + make_interval(secs => %s)"
                    " WHERE claim_id = ANY(%s)",
                    (self.lease_seconds, held),
                )
            except PoolClosed:  # the store shut down: nothing of this process renews
                with self._lock:
                    self._held.clear()
                    self._renewer = None
                return
            except psycopg.Error:  # Postgres away: the claims expire, callers carry on
                log.warning("could not renew %s model claim(s)", len(held), exc_info=True)
            with self._lock:
                self._wake.wait(self.renew_seconds)


class Throttled:
    """A yes/no question asked at most every ``interval`` seconds; in between, the last
    answer. Keeps a check made every few streamed tokens from costing a query each."""

    def __init__(self, ask: Callable[[], bool], interval: float) -> None:
        """Wrap ``ask``."""
        self.ask = ask
        self.interval = interval
        self._at = -float("inf")
        self._answer = False

    def set(self, answer: bool) -> None:
        """Take ``answer``, just asked elsewhere, as the latest one."""
        self._answer, self._at = answer, time.monotonic()

    def __call__(self) -> bool:
        """The answer, asked again when the last one is older than ``interval``."""
        now = time.monotonic()
        if now - self._at >= self.interval:
            self._answer = self.ask()
            self._at = now
        return self._answer
