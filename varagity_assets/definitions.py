"""The Dagster code location: ``dagster dev -m varagity_assets.definitions``."""

import dagster as dg

from varagity_assets.documents import assets
from varagity_assets.documents.checks import document_checks
from varagity_assets.documents.resources import ArtifactIOManager, VaragityResource
from varagity_assets.documents.sensors import (
    chunk_contexts_sensor,
    contextualize_documents_job,
    docs_folder_sensor,
    ingest_documents_job,
)
from varagity_assets.evaluation.assets import evaluation_assets
from varagity_assets.evaluation.checks import evaluate_index_job, evaluation_checks

defs = dg.Definitions(
    assets=[*dg.load_assets_from_modules([assets]), *evaluation_assets],
    asset_checks=[*document_checks, *evaluation_checks],
    jobs=[ingest_documents_job, contextualize_documents_job, evaluate_index_job],
    sensors=[docs_folder_sensor, chunk_contexts_sensor],
    resources={"varagity": VaragityResource(), "artifacts": ArtifactIOManager()},
)
