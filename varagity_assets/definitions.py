"""The Dagster code location: ``dagster dev -m varagity_assets.definitions``.

Every module under ``defs/`` (one folder per domain: ``ingest``, ``evaluation``) is
loaded for its assets, checks, jobs and sensors; the resources of ``resources.py`` are
bound to all of them. Nothing is read or opened before the location loads.
"""

import functools
from pathlib import Path

import dagster as dg

from varagity_assets.resources import location_resources


@functools.cache
def build() -> dg.Definitions:
    """Everything under ``defs/``, bound to the location's resources; built once per
    process. Dagster loads the location again in every run worker (importing each
    ``defs/`` module, building the component tree and its JSON schemas: ~0.6 s of a
    run's CPU here); a worker forked warm from the code server inherits this one (see
    :mod:`varagity_assets.code_server`)."""
    return dg.Definitions.merge(
        dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
        dg.Definitions(resources=location_resources()),
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The location's definitions (:func:`build`)."""
    return build()
