"""``/api/settings``: read every setting, change the runtime-editable ones."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic.fields import FieldInfo
from starlette.concurrency import run_in_threadpool

from varagity.config import REINGEST_AFFECTING, RUNTIME_EDITABLE, Settings
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState
from varagity.stores.postgres import redact
from varagity.stores.settings_overrides import OverrideValidationError, env_string
from varagity_api.deps import ServicesDep
from varagity_api.schemas.settings import (
    SettingError,
    SettingField,
    SettingsErrorBody,
    SettingsPatch,
    SettingsPatchResponse,
    SettingsResponse,
    SettingType,
    SettingValue,
    SkippedOverride,
    StaleFlag,
)

router = APIRouter(tags=["settings"])

_MASK = "********"
_SCALARS: dict[type, SettingType] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    Path: "path",
}
_BOUNDS = (
    ("ge", "minimum"),
    ("gt", "exclusive_minimum"),
    ("le", "maximum"),
    ("lt", "exclusive_maximum"),
)


def _is_secret(name: str) -> bool:
    return name == "API_KEY" or name.endswith("_API_KEY")


def _wire(name: str, value: Any) -> SettingValue:
    """A value as the client sees it: JSON scalars, secrets masked, URL passwords hidden."""
    if value is None:
        return None
    if _is_secret(name):
        return _MASK
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str) and name.endswith("_URL"):
        return redact(value)
    return typing.cast(SettingValue, value)


def _shape(info: FieldInfo) -> dict[str, Any]:
    """Type, nullability, choices and bounds of a field, for a form to validate against."""
    annotation = info.annotation
    nullable = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        annotation = args[0]
    shape: dict[str, Any] = {"nullable": nullable}
    if typing.get_origin(annotation) is Literal:
        shape["type"] = "enum"
        shape["choices"] = [str(c) for c in typing.get_args(annotation)]
    else:
        shape["type"] = _SCALARS[typing.cast(type, annotation)]
    for bound in info.metadata:  # annotated-types constraints from Field(ge=..., lt=...)
        for attr, key in _BOUNDS:
            if getattr(bound, attr, None) is not None:
                shape[key] = getattr(bound, attr)
    return shape


def settings_view(services: Services) -> SettingsResponse:
    """Every setting with its effective, environment and default values, the stale
    flag, and the stored overrides skipped because they no longer validate."""
    fields = [
        SettingField(
            name=name,
            value=_wire(name, getattr(services.settings, name)),
            environment_value=_wire(name, getattr(services.base_settings, name)),
            default=_wire(name, info.default),
            overridden=name in services.overrides,
            runtime_editable=name in RUNTIME_EDITABLE,
            reingest_affecting=name in REINGEST_AFFECTING,
            secret=_is_secret(name),
            description=info.description,
            **_shape(info),
        )
        for name, info in Settings.model_fields.items()
    ]
    flag = CorpusState(services.pg).stale()
    return SettingsResponse(
        settings=fields,
        stale=StaleFlag(reason=flag.reason, since=flag.since) if flag else None,
        skipped_overrides=[
            SkippedOverride(name=p.name, value=p.value, reason=p.reason)
            for p in services.override_problems
        ],
    )


@router.get("/settings", response_model=SettingsResponse)
async def read_settings(services: ServicesDep) -> SettingsResponse:
    """Every setting as a form needs it: effective value, default, whether it is
    overridden, editable at runtime or reingest-affecting, its type and bounds."""
    return await run_in_threadpool(settings_view, services)


@router.patch(
    "/settings",
    response_model=SettingsPatchResponse,
    responses={422: {"model": SettingsErrorBody, "description": "Nothing was changed."}},
)
async def update_settings(
    body: SettingsPatch, request: Request, services: ServicesDep
) -> SettingsPatchResponse | JSONResponse:
    """Set (a value) or remove (null) runtime overrides.

    The merged overrides are validated as a whole first: an invalid patch changes
    nothing and answers 422 with one entry per setting at fault. A valid one is stored
    in one transaction and applies at once; changing a reingest-affecting setting on a
    non-empty corpus flags it stale until a reingest.
    """
    changes = {n: None if v is None else env_string(v) for n, v in body.values.items()}
    try:
        changed = await run_in_threadpool(services.update_settings, changes)
    except OverrideValidationError as exc:
        codes = {e.code for e in exc.errors}
        code = next(
            (c for c in ("unknown_setting", "not_runtime_editable") if c in codes),
            "invalid_settings",
        )
        error = SettingsErrorBody(
            code=code,
            message=f"Settings not changed: {exc}",
            errors=[
                SettingError(field=e.field, code=e.code, message=e.message) for e in exc.errors
            ],
        )
        return JSONResponse(error.model_dump(mode="json"), status_code=422)
    view = await run_in_threadpool(settings_view, services)
    return SettingsPatchResponse(
        settings=view.settings,
        stale=view.stale,
        skipped_overrides=view.skipped_overrides,
        changed=changed,
    )
