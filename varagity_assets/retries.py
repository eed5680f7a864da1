"""The one retry policy of every step that calls a model server or writes a corpus: an
outage retries the step, anything else fails it.

Two layers, one rule. A model client retries a transient failure itself, within
seconds (``MODEL_MAX_RETRIES``, :mod:`varagity.models.base`): a dropped connection, a
busy server. When those are spent the failure is an *outage* (:func:`is_outage`: a
model server that cannot be reached, times out or answers 408/409/425/429/5xx, or
Postgres gone, or the corpus held by a backup export or restore for the moment), no
input's fault, and the whole step is retried by Dagster after
longer waits while the supervisor (or the operator) brings the service back: the
:func:`step_retry_policy`, ``MODEL_STEP_RETRIES`` times, exponential backoff with
jitter. Each retry is a "step up for retry" event in the run view, with the error. Any
other error (a 4xx answer, a file that cannot be parsed) is not retried.

Steps apply it with :func:`retry_on_outage`. The waits come from the settings when the
step fails, not when the code location loads, and only outages reach them: a
``retry_policy`` declared on the asset would also retry bad input and a run being
terminated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import dagster as dg
import psycopg

from varagity.config import Settings, get_settings
from varagity.corpus_lock import CorpusBusy
from varagity.models.base import ModelError

F = TypeVar("F", bound=Callable[..., Any])


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (``raise ... from``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says a service is down rather than
    that the input is bad: a model call that failed transiently after the client's own
    retries, Postgres gone (a lost or refused connection; a cancelled statement is the
    query's own), or the corpus held by another writer (a graph build meeting a backup
    export, a store write meeting a restore: the holder lets go within the waits)."""
    for cause in _chain(exc):
        if isinstance(cause, ModelError) and cause.transient:
            return True
        if isinstance(cause, CorpusBusy):
            return True
        if isinstance(cause, psycopg.OperationalError) and not isinstance(
            cause, psycopg.errors.QueryCanceled
        ):
            return True
    return False


def step_retry_policy(settings: Settings | None = None) -> dg.RetryPolicy:
    """The retry policy of a step after an outage: ``MODEL_STEP_RETRIES`` retries, the
    n-th after ``(2^n - 1) * MODEL_STEP_RETRY_DELAY_S`` seconds, give or take one delay
    (jitter, so steps that met the same outage do not all come back at once)."""
    s = settings or get_settings()
    return dg.RetryPolicy(
        max_retries=s.MODEL_STEP_RETRIES,
        delay=s.MODEL_STEP_RETRY_DELAY_S,
        backoff=dg.Backoff.EXPONENTIAL,
        jitter=dg.Jitter.PLUS_MINUS,
    )


def retry_on_outage(fn: F) -> F:
    """Wrap a step's compute function (its first argument the context) so that an
    outage it raises retries the step under :func:`step_retry_policy`, and fails it once
    the retries are spent; other errors pass through untouched."""

    @functools.wraps(fn)
    def compute(context: dg.OpExecutionContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(context, *args, **kwargs)
        except Exception as exc:
            if not is_outage(exc):
                raise
            policy = step_retry_policy()
            attempt = context.retry_number + 1
            if attempt > policy.max_retries:
                context.log.error(
                    f"{type(exc).__name__}: {exc}; still failing after "
                    f"{policy.max_retries} step retries"
                )
                raise
            wait = max(0.0, float(policy.calculate_delay(attempt)))
            context.log.warning(
                f"{type(exc).__name__}: {exc}; retrying the step in {wait:.1f} s "
                f"(retry {attempt} of {policy.max_retries})"
            )
            raise dg.RetryRequested(max_retries=policy.max_retries, seconds_to_wait=wait) from exc

    return compute  # type: ignore[return-value]
