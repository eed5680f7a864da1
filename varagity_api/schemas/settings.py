"""Settings bodies: every field described for a form, and the override patch."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from varagity.stores.settings_overrides import FieldErrorCode
from varagity_api.schemas.common import ErrorBody

SettingValue = bool | int | float | str | None
SettingType = Literal["boolean", "integer", "number", "string", "path", "enum"]


class SettingField(BaseModel):
    """One setting: its values, where they come from, and how a form validates it."""

    name: str
    value: SettingValue = Field(description="The effective value (secrets masked).")
    environment_value: SettingValue = Field(
        description="The value from the environment, .env or the default: what removing "
        "the override restores."
    )
    default: SettingValue = Field(description="The built-in default.")
    overridden: bool = Field(description="A runtime override is in effect.")
    runtime_editable: bool = Field(
        description="PATCH /api/settings may change it; others need a restart."
    )
    reingest_affecting: bool = Field(
        description="Changing it makes already-ingested chunks out of date."
    )
    secret: bool = Field(description="The value is masked here.")
    type: SettingType
    nullable: bool
    choices: list[str] | None = Field(default=None, description="The allowed values (enum).")
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    description: str | None = None


class StaleFlag(BaseModel):
    """A corpus was built with other settings than the current ones: the documents with
    other reingest-affecting settings, the message graph with another chat model or
    other extraction settings."""

    reason: str
    since: datetime


class SkippedOverride(BaseModel):
    """A stored override that no longer validates and is not in effect."""

    name: str
    value: str
    reason: str


class SettingsResponse(BaseModel):
    """Every setting, the corpus stale flag, and overrides skipped at startup."""

    settings: list[SettingField]
    stale: StaleFlag | None
    skipped_overrides: list[SkippedOverride]


class SettingsPatch(BaseModel):
    """Overrides to set (a value) or remove (null), by setting name."""

    model_config = ConfigDict(extra="forbid")

    values: dict[str, SettingValue] = Field(
        description="Setting name -> new value, or null to remove its override.",
        examples=[{"RETRIEVAL_METHOD": "bm25", "TOP_K": 8, "CHUNK_SIZE": None}],
    )


class SettingsPatchResponse(SettingsResponse):
    """The settings after a successful patch, and which effective values changed."""

    changed: list[str]


class SettingError(BaseModel):
    """Why one setting of a patch was refused."""

    field: str | None = Field(description="The setting; null for a rule naming none.")
    code: FieldErrorCode
    message: str


class SettingsErrorBody(ErrorBody):
    """A refused patch (nothing was changed): the usual error plus per-setting errors."""

    errors: list[SettingError]
