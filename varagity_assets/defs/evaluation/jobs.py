"""The evaluation job: the golden suite scored on the live index, then released."""

import dagster as dg

from varagity.pipeline import EVALUATE_JOB
from varagity_assets.defs.evaluation.assets import (
    answer_eval_results,
    eval_results,
    search_index_release,
)

evaluate_index_job = dg.define_asset_job(
    EVALUATE_JOB,
    selection=dg.AssetSelection.assets(eval_results, answer_eval_results, search_index_release),
    description="Score retrieval and answers of the golden suite on the live index; release "
    "it when every gate passes.",
)
