"""``eval_results``: the golden suite scored against the live search index.

The asset depends on every partition of ``indexed_document`` (any ingest run makes it
stale), runs the suite's questions through the gate's retrieval method on the live
stores (nothing is re-ingested) and records Pass@k, MRR and latency percentiles as
numeric metadata the UI plots, plus the per-question ranks and the thresholds the
blocking checks in :mod:`varagity_assets.evaluation.checks` compare against.
``search_index_release`` runs after those checks and so never materializes in a run
where a gate failed.
"""

from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from varagity.eval import runner
from varagity.eval.configs import EvalConfig
from varagity.eval.suite import Suite, Thresholds, load_suite, load_thresholds
from varagity.ingest.discovery import file_sha256
from varagity_assets.documents.assets import indexed_document
from varagity_assets.documents.resources import VaragityResource

DEFAULT_SUITE = Path(__file__).resolve().parents[2] / "eval_suites" / "sample"


class EvalRunConfig(dg.Config):
    """Which suite to run and, optionally, another thresholds file."""

    suite_path: str = str(DEFAULT_SUITE)
    thresholds_path: str | None = None
    ks: list[int] = Field(default_factory=lambda: [5, 10, 20])


def corpus_differences(docs_path: Path, suite: Suite) -> list[str]:
    """The suite's source files that ``DOCS_PATH`` lacks or holds in another version.

    Args:
        docs_path: The live corpus folder.
        suite: The golden suite.

    Returns:
        One line per differing file (empty when the live corpus holds the suite's files).
    """
    out = []
    for rel in suite.corpus_files():
        live = docs_path / rel
        if not live.is_file():
            out.append(f"{rel}: missing from DOCS_PATH")
        elif file_sha256(live) != file_sha256(suite.corpus / rel):
            out.append(f"{rel}: differs from the suite's copy")
    return out


@dg.asset(
    group_name="evaluation",
    deps=[dg.AssetDep(indexed_document, partition_mapping=dg.AllPartitionMapping())],
    kinds={"python"},
)
def eval_results(
    context: dg.AssetExecutionContext, config: EvalRunConfig, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Pass@k, MRR and latency of the golden suite on the live index (no re-ingest)."""
    settings = varagity.settings
    suite = load_suite(config.suite_path)
    thresholds = (
        load_thresholds(Path(config.thresholds_path))
        if config.thresholds_path
        else suite.thresholds
    )
    gate = thresholds or Thresholds(settings.RETRIEVAL_METHOD, 5, 0.0, 0.0)
    ks = sorted({*config.ks, gate.k})
    same_folder = settings.docs_path.resolve() == suite.corpus.resolve()
    differences = corpus_differences(settings.docs_path, suite)
    if differences:
        corpus_note = (
            f"DOCS_PATH ({settings.docs_path}) is not the suite's corpus ({suite.corpus}): "
            + "; ".join(differences)
        )
        context.log.warning(corpus_note)
    elif same_folder:
        corpus_note = "DOCS_PATH is the suite's corpus"
    else:
        corpus_note = (
            f"DOCS_PATH ({settings.docs_path}) is not the suite's corpus folder "
            f"({suite.corpus}), but holds identical copies of every file the suite cites"
        )
    result = runner.evaluate(
        varagity.services, suite, EvalConfig(f"live/{gate.method}", gate.method), ks
    )
    if not result.ok:
        raise dg.Failure(description=f"evaluation could not run: {result.error}")
    latency = result.latency()
    total = latency.get("total", {"p50": 0.0, "p95": 0.0})
    metadata: dict[str, Any] = {
        "results": dg.MetadataValue.md(runner.markdown_table([result], ks)),
        "method": gate.method,
        "suite": suite.name,
        "n_queries": len(result.scores),
        "mrr": dg.MetadataValue.float(round(result.mrr(gate.k), 4)),
        "latency_p50_ms": dg.MetadataValue.float(total["p50"]),
        "latency_p95_ms": dg.MetadataValue.float(total["p95"]),
        "stage_latency_ms": dg.MetadataValue.json(latency),
        "thresholds": dg.MetadataValue.json(
            {**gate.to_dict(), "source": config.thresholds_path or "suite"}
            if thresholds
            else {**gate.to_dict(), "source": "none (gate disabled)"}
        ),
        "questions": dg.MetadataValue.json(result.to_dict()["questions"]),
        "docs_path": str(settings.docs_path),
        "corpus_matches_suite": not differences,
        "corpus_note": corpus_note,
    }
    for k in ks:
        metadata[f"pass_at_{k}"] = dg.MetadataValue.float(round(result.pass_at(k), 4))
        metadata[f"mrr_at_{k}"] = dg.MetadataValue.float(round(result.mrr(k), 4))
    context.log.info(
        f"{suite.name} on {gate.method}: Pass@{gate.k} {result.pass_at(gate.k):.3f}, "
        f"MRR@{gate.k} {result.mrr(gate.k):.3f}"
    )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(group_name="evaluation", deps=[eval_results], kinds={"python"})
def search_index_release(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """The live index, released: materializes only after every blocking eval gate passed."""
    event = context.instance.get_latest_materialization_event(eval_results.key)
    md = event.asset_materialization.metadata if event and event.asset_materialization else {}
    keep = {k: v for k, v in md.items() if k.startswith(("pass_at_", "mrr"))}
    return dg.MaterializeResult(
        metadata={"evaluated_in_run": event.run_id if event else "unknown", **keep}
    )


evaluation_assets = [eval_results, search_index_release]
