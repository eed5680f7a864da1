"""Runtime settings overrides: the ``app_settings`` rows ``PATCH /api/settings`` writes.

One row per overridden setting, keyed by its name, the value in environment-string
form (what pydantic-settings would parse from an environment variable). Only the
:data:`~varagity.config.RUNTIME_EDITABLE` settings may be overridden; keys starting
with ``_`` are app metadata (:mod:`varagity.stores.corpus_state`), never overrides.

Every process replays the rows onto its environment settings when it opens its
:class:`~varagity.services.Services`, so the API, Dagster runs, the sensor and the CLI
all work with the same effective settings. A stored override that no longer validates
(the environment or the code changed under it) is skipped with an error log, so a
process still starts, on the environment's value.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import ValidationError

from varagity.config import RUNTIME_EDITABLE, Settings
from varagity.stores.vector_store import PgVectorStore

log = logging.getLogger(__name__)

METADATA_PREFIX = "_"
"""Keys starting with this are app metadata, not overrides."""

FieldErrorCode = Literal[
    "unknown_setting", "not_runtime_editable", "invalid_value", "invalid_combination"
]
_FIELD_NAME = re.compile(r"\b[A-Z][A-Z0-9_]*\b")


def env_string(value: object) -> str:
    """``value`` as an environment variable would spell it (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class OverrideRow:
    """One stored override."""

    name: str
    value: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class FieldError:
    """Why a setting (or a combination naming it) does not validate.

    ``field`` is None for a cross-field rule whose message names no setting.
    """

    field: str | None
    code: FieldErrorCode
    message: str


class OverrideValidationError(ValueError):
    """Overrides that would not validate; ``errors`` holds one entry per problem."""

    def __init__(self, errors: list[FieldError]) -> None:
        """Keep the per-field errors; the message joins them."""
        super().__init__("; ".join(f"{e.field or 'settings'}: {e.message}" for e in errors))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class OverrideProblem:
    """A stored override that was skipped, and why."""

    name: str
    value: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}={self.value!r}: {self.reason}"


def check_names(names: Iterable[str]) -> None:
    """Raise :class:`OverrideValidationError` for names that cannot be overridden."""
    errors = []
    for name in names:
        if name not in Settings.model_fields:
            errors.append(FieldError(name, "unknown_setting", f"{name} is not a Varagity setting"))
        elif name not in RUNTIME_EDITABLE:
            errors.append(
                FieldError(
                    name,
                    "not_runtime_editable",
                    f"{name} decides which stores, servers or folders a process uses and "
                    "cannot change while it runs: set it in the environment (or .env) and "
                    "restart",
                )
            )
    if errors:
        raise OverrideValidationError(errors)


def validate_overrides(base: Settings, values: Mapping[str, str]) -> Settings:
    """``base`` with ``values`` (environment strings) applied, through every validator.

    The result keeps ``base``'s explicitly set fields and adds the overridden ones.

    Raises:
        OverrideValidationError: A name is unknown or not runtime-editable, a value
            does not parse or is out of bounds, or a cross-field rule (fusion weights,
            rerank bounds, chunk overlap) fails on the merged whole.
    """
    check_names(values)
    try:
        merged = Settings.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        raise OverrideValidationError(_field_errors(exc)) from None
    return base.model_copy(update={name: getattr(merged, name) for name in values})


def _field_errors(exc: ValidationError) -> list[FieldError]:
    errors = []
    for err in exc.errors(include_url=False):
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["loc"]:
            errors.append(FieldError(str(err["loc"][0]), "invalid_value", message))
            continue
        # a cross-field rule: attribute it to every setting its message names
        named = [
            n for n in dict.fromkeys(_FIELD_NAME.findall(message)) if n in Settings.model_fields
        ]
        errors.extend(FieldError(n, "invalid_combination", message) for n in named)
        if not named:
            errors.append(FieldError(None, "invalid_combination", message))
    return errors


def apply_overrides(
    base: Settings, rows: Iterable[OverrideRow]
) -> tuple[Settings, list[OverrideProblem]]:
    """Replay stored overrides onto ``base``, skipping those that no longer validate.

    A row is skipped when its name cannot be overridden, its value does not validate,
    or it takes part in a cross-field rule that fails (every override the rule's
    message names is skipped; when it names none, all remaining overrides are). Each
    skip is logged as an error naming the setting and the reason.

    Returns:
        The effective settings and the skipped rows.
    """
    values = {r.name: r.value for r in rows}
    problems: list[OverrideProblem] = []
    while True:
        try:
            settings = validate_overrides(base, values)
            break
        except OverrideValidationError as exc:
            blamed: dict[str, str] = {}
            for err in exc.errors:
                if err.field is not None and err.field in values:
                    blamed.setdefault(err.field, err.message)
            if not blamed:  # a rule naming no override: nothing stored can be trusted
                blamed = dict.fromkeys(values, str(exc))
            for name, reason in sorted(blamed.items()):
                problems.append(OverrideProblem(name, values.pop(name), reason))
    for problem in problems:
        log.error("skipping the stored settings override %s", problem)
    return settings, problems


class SettingsOverrideStore:
    """Reads and writes the override rows of ``app_settings``."""

    def __init__(self, pg: PgVectorStore) -> None:
        """Use the store's pool."""
        self.pg = pg

    def rows(self) -> list[OverrideRow]:
        """Every stored override (app metadata rows excluded), by name."""
        with self.pg.connection() as conn:
            found = conn.execute(
                "SELECT key, value, updated_at FROM app_settings"
                " WHERE left(key, 1) <> %s ORDER BY key",
                (METADATA_PREFIX,),
            ).fetchall()
        return [OverrideRow(*r) for r in found]

    def save(self, values: Mapping[str, str], remove: Collection[str] = ()) -> None:
        """Upsert ``values`` and delete the ``remove`` overrides, in one transaction.

        Raises:
            OverrideValidationError: A name is unknown or not runtime-editable
                (nothing is written).
        """
        check_names([*values, *remove])
        with self.pg.connection() as conn, conn.transaction():
            if values:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO app_settings (key, value, updated_at)"
                        " VALUES (%s, %s, now()) ON CONFLICT (key) DO UPDATE"
                        " SET value = EXCLUDED.value, updated_at = now()",
                        list(values.items()),
                    )
            if remove:
                conn.execute("DELETE FROM app_settings WHERE key = ANY(%s)", (list(remove),))
