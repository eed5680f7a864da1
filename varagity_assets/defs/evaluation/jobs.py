"""The evaluation jobs: the golden suite scored on the live index, then released; its
answers alone (an answer evaluation); the graph suite answered from a graph of its own,
then graph answering released."""

import dagster as dg

from varagity.pipeline import ANSWER_EVAL_JOB, EVALUATE_JOB, GRAPH_EVALUATE_JOB
from varagity_assets.defs.evaluation.assets import (
    answer_eval_results,
    eval_results,
    graph_answers_release,
    graph_eval_results,
    search_index_release,
)

evaluate_index_job = dg.define_asset_job(
    EVALUATE_JOB,
    selection=dg.AssetSelection.assets(eval_results, answer_eval_results, search_index_release),
    description="Score retrieval and answers of the golden suite on the live index; release "
    "it when every gate passes.",
)

evaluate_answers_job = dg.define_asset_job(
    ANSWER_EVAL_JOB,
    selection=dg.AssetSelection.assets(answer_eval_results),
    description="Answer a golden suite on the live index and check the answer gates (an "
    "answer evaluation, launched and followed by the API and `varagity evaluation`).",
)

evaluate_graph_job = dg.define_asset_job(
    GRAPH_EVALUATE_JOB,
    selection=dg.AssetSelection.assets(graph_eval_results, graph_answers_release),
    description="Answer the graph suite from a graph of its own sessions (built through the "
    "graph assets, reused while nothing changed) and release graph answering when the "
    "graph answer gate passes.",
)
