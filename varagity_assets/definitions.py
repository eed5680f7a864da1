"""The Dagster code location: ``dagster dev -m varagity_assets.definitions``."""

import dagster as dg

from varagity_assets.documents import assets
from varagity_assets.documents.checks import document_checks
from varagity_assets.documents.resources import ArtifactIOManager, VaragityResource
from varagity_assets.documents.sensors import docs_folder_sensor, ingest_documents_job

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    asset_checks=document_checks,
    jobs=[ingest_documents_job],
    sensors=[docs_folder_sensor],
    resources={"varagity": VaragityResource(), "artifacts": ArtifactIOManager()},
)
