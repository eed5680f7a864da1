"""Data-quality expectations on stored chunks and their embeddings (great-expectations).

The chunks of some documents (or of the whole corpus) are read from Postgres into a
pandas DataFrame, one row per chunk, with each embedding's dimension and L2 norm
computed by pgvector (``vector_dims``, ``vector_norm``) so the vectors themselves never
leave the database. A great-expectations suite then runs over that frame in an
ephemeral, in-memory context: no project folder is written, nothing is fetched, no
usage statistics are sent and no progress bars are drawn.

The expectations (each has a short name, used as its id in reports):

* ``content_not_blank`` - ``content`` holds at least one non-whitespace character;
* ``n_tokens_present`` / ``n_tokens_in_range`` - ``n_tokens`` is set and within
  ``[1, max_tokens]`` (see :func:`max_tokens_for`);
* ``identity_unique`` - ``(doc_id, original_index)``, the cross-store fusion key, is
  unique;
* ``page_valid`` - ``page`` is null (formats without pages) or >= 1;
* ``extraction_present`` / ``extraction_known`` - ``extraction`` is one of
  :data:`~varagity.ingest.parsers.base.EXTRACTIONS`;
* ``embedding_dimension`` - every vector has ``EMBEDDING_DIM`` dimensions;
* ``embedding_unit_norm`` - every vector has L2 norm 1 within :data:`NORM_TOLERANCE`
  (the embedding clients L2-normalise; cosine search relies on it).

Great-expectations' column-value expectations ignore nulls, hence the two explicit
``*_present`` expectations for the fields read out of the JSONB metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from varagity.config import Settings
from varagity.ingest.parsers.base import EXTRACTIONS
from varagity.stores.corpus_queries import chunk_quality_rows
from varagity.stores.vector_store import PgVectorStore

if TYPE_CHECKING:
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.data_context import EphemeralDataContext
    from great_expectations.expectations.expectation import Expectation

log = logging.getLogger(__name__)

Group = Literal["content", "embedding"]
GROUPS: tuple[Group, ...] = ("content", "embedding")
NORM_TOLERANCE = 1e-3
MAX_EXAMPLES = 10
# How much longer than CHUNK_SIZE (in cl100k tokens) a chunk may be; see max_tokens_for.
TOKEN_SLACK = 2

# The frame's columns, in order, with the dtype each is coerced to.
CHUNK_COLUMNS: dict[str, str] = {
    "chunk_id": "object",
    "doc_id": "object",
    "relative_path": "object",
    "original_index": "float64",
    "chunk_index": "float64",
    "content": "object",
    "n_tokens": "float64",
    "page": "float64",
    "extraction": "object",
    "embedding_dim": "float64",
    "embedding_norm": "float64",
}


# --- reading ---------------------------------------------------------------------
def empty_chunk_frame() -> pd.DataFrame:
    """A frame with the chunk columns and no rows."""
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in CHUNK_COLUMNS.items()})


def chunk_frame(rows: Sequence[Sequence[Any]] | pd.DataFrame) -> pd.DataFrame:
    """Coerce rows (in :data:`CHUNK_COLUMNS` order) or a frame to the chunk frame's dtypes.

    Numeric columns become ``float64`` so that nulls are ``NaN`` (great-expectations
    treats them as missing) whatever pandas would have inferred.
    """
    frame = (
        rows.copy()
        if isinstance(rows, pd.DataFrame)
        else pd.DataFrame(rows, columns=[*CHUNK_COLUMNS])
    )
    if frame.empty:
        return empty_chunk_frame()
    for column, dtype in CHUNK_COLUMNS.items():
        if column not in frame:
            frame[column] = None
        if dtype == "float64":
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
        else:
            frame[column] = frame[column].astype("object").where(frame[column].notna(), None)
    return frame[[*CHUNK_COLUMNS]].reset_index(drop=True)


def load_chunk_frame(pg: PgVectorStore, doc_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """The chunks of ``doc_ids`` (all chunks when ``None``), one row each.

    Args:
        pg: The store to read.
        doc_ids: Documents whose chunks to read; ``None`` reads the whole corpus and an
            empty sequence reads nothing.

    Returns:
        A frame with the :data:`CHUNK_COLUMNS`, ordered by path and chunk index.
    """
    return chunk_frame(chunk_quality_rows(pg, doc_ids))


# --- the suite -------------------------------------------------------------------
def max_tokens_for(settings: Settings) -> int:
    """Upper bound on a chunk's ``n_tokens``: ``TOKEN_SLACK x CHUNK_SIZE``.

    ``n_tokens`` is a cl100k count while ``CHUNK_SIZE`` is in the chunker's unit. For
    character-unit strategies (recursive_character, markdown_aware) a chunk of at most
    ``CHUNK_SIZE`` characters is normally far fewer cl100k tokens (about four characters
    per token in English), and twice the size still admits scripts cl100k spends more
    than one token per character on. For token-unit strategies the chunker counts with
    its own tokenizer, which differs from cl100k; the factor absorbs that mismatch. A
    chunk above the bound means the chunker did not honour its size.
    """
    return TOKEN_SLACK * settings.CHUNK_SIZE


@dataclass(frozen=True, slots=True)
class QualityExpectation:
    """One expectation of the suite, with the name reports use for it."""

    name: str
    group: Group
    columns: tuple[str, ...]
    description: str
    build: Callable[[], Expectation] = field(repr=False)

    @property
    def column(self) -> str:
        """The checked column(s), comma-joined."""
        return ", ".join(self.columns)


def chunk_expectations(
    *, max_tokens: int, embedding_dim: int, norm_tolerance: float = NORM_TOLERANCE
) -> list[QualityExpectation]:
    """Every expectation on chunk rows, in report order.

    Args:
        max_tokens: Upper bound on ``n_tokens`` (see :func:`max_tokens_for`).
        embedding_dim: The dimension every vector must have (``EMBEDDING_DIM``).
        norm_tolerance: Allowed distance of a vector's L2 norm from 1.
    """
    import great_expectations as gx

    ge = gx.expectations
    return [
        QualityExpectation(
            "content_not_blank",
            "content",
            ("content",),
            "content has a non-whitespace character",
            lambda: ge.ExpectColumnValuesToMatchRegex(column="content", regex=r"\S"),
        ),
        QualityExpectation(
            "n_tokens_present",
            "content",
            ("n_tokens",),
            "n_tokens is set",
            lambda: ge.ExpectColumnValuesToNotBeNull(column="n_tokens"),
        ),
        QualityExpectation(
            "n_tokens_in_range",
            "content",
            ("n_tokens",),
            f"1 <= n_tokens <= {max_tokens}",
            lambda: ge.ExpectColumnValuesToBeBetween(
                column="n_tokens", min_value=1, max_value=max_tokens
            ),
        ),
        QualityExpectation(
            "identity_unique",
            "content",
            ("doc_id", "original_index"),
            "(doc_id, original_index) is unique",
            lambda: ge.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "original_index"]),
        ),
        QualityExpectation(
            "page_valid",
            "content",
            ("page",),
            "page is null or >= 1",
            lambda: ge.ExpectColumnValuesToBeBetween(column="page", min_value=1),
        ),
        QualityExpectation(
            "extraction_present",
            "content",
            ("extraction",),
            "extraction is set",
            lambda: ge.ExpectColumnValuesToNotBeNull(column="extraction"),
        ),
        QualityExpectation(
            "extraction_known",
            "content",
            ("extraction",),
            f"extraction in {{{', '.join(EXTRACTIONS)}}}",
            lambda: ge.ExpectColumnValuesToBeInSet(column="extraction", value_set=[*EXTRACTIONS]),
        ),
        QualityExpectation(
            "embedding_dimension",
            "embedding",
            ("embedding_dim",),
            f"vector_dims(embedding) = {embedding_dim}",
            lambda: ge.ExpectColumnValuesToBeBetween(
                column="embedding_dim", min_value=embedding_dim, max_value=embedding_dim
            ),
        ),
        QualityExpectation(
            "embedding_unit_norm",
            "embedding",
            ("embedding_norm",),
            f"|vector_norm(embedding) - 1| <= {norm_tolerance:g}",
            lambda: ge.ExpectColumnValuesToBeBetween(
                column="embedding_norm", min_value=1 - norm_tolerance, max_value=1 + norm_tolerance
            ),
        ),
    ]


def expectations_for(
    settings: Settings, groups: Sequence[Group] = GROUPS
) -> list[QualityExpectation]:
    """The expectations of ``groups`` with bounds from ``settings``."""
    specs = chunk_expectations(
        max_tokens=max_tokens_for(settings), embedding_dim=settings.EMBEDDING_DIM
    )
    return [s for s in specs if s.group in groups]


# --- results ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FailingExample:
    """One chunk that broke an expectation."""

    chunk_id: str
    relative_path: str | None
    value: str


@dataclass(frozen=True, slots=True)
class ExpectationOutcome:
    """How one expectation fared."""

    name: str
    description: str
    column: str
    success: bool
    observed: str
    element_count: int
    unexpected_count: int
    examples: tuple[FailingExample, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class QualityReport:
    """The outcome of every expectation over one set of chunks."""

    n_chunks: int
    n_documents: int
    outcomes: tuple[ExpectationOutcome, ...]

    @property
    def success(self) -> bool:
        """Whether every expectation held."""
        return all(o.success for o in self.outcomes)

    @property
    def failed(self) -> list[ExpectationOutcome]:
        """The expectations that did not hold."""
        return [o for o in self.outcomes if not o.success]

    @property
    def unexpected_values(self) -> int:
        """Rows breaking an expectation, summed over expectations."""
        return sum(o.unexpected_count for o in self.outcomes)

    @property
    def failing_chunk_ids(self) -> list[str]:
        """Distinct chunk ids among the failing examples, in report order."""
        return list(dict.fromkeys(e.chunk_id for o in self.outcomes for e in o.examples))

    def expectations_markdown(self) -> str:
        """A Markdown table: one row per expectation."""
        lines = [
            "| expectation | rule | result | observed | unexpected |",
            "|---|---|---|---|---|",
        ]
        for o in self.outcomes:
            status = "pass" if o.success else ("**error**" if o.error else "**FAIL**")
            lines.append(
                f"| {o.name} | {_md(o.description)} | {status} | {_md(o.observed)} "
                f"| {o.unexpected_count} of {o.element_count} |"
            )
        return "\n".join(lines)

    def examples_markdown(self) -> str:
        """A Markdown table of failing examples (at most :data:`MAX_EXAMPLES` each)."""
        rows = [
            f"| {o.name} | `{_md(e.chunk_id)}` | {_md(e.relative_path or '')} | {_md(e.value)} |"
            for o in self.failed
            for e in o.examples
        ]
        errors = [f"| {o.name} | | | error: {_md(o.error)} |" for o in self.failed if o.error]
        if not rows and not errors:
            return "No failing chunks."
        header = ["| expectation | chunk_id | relative_path | value |", "|---|---|---|---|"]
        return "\n".join(header + rows + errors)


def _md(text: str) -> str:
    """Make ``text`` safe inside a Markdown table cell."""
    flat = " ".join(str(text).split()) if str(text).strip() else repr(str(text))
    return flat.replace("|", "\\|")[:200]


def _plain(value: Any) -> Any:
    """numpy scalars to Python (``np.int64(3)`` -> ``3``)."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _show(value: Any) -> str:
    value = _plain(value)
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value) if isinstance(value, str) else str(value)


def _observed(spec: QualityExpectation, frame: pd.DataFrame) -> str:
    """A short description of what the checked column(s) actually hold."""
    if frame.empty:
        return "no chunks"
    if spec.name == "identity_unique":
        dupes = int(frame.duplicated(subset=[*spec.columns], keep=False).sum())
        return f"{dupes} row(s) share a key"
    column = frame[spec.columns[0]]
    nulls = int(column.isna().sum())
    if spec.name.endswith("_present"):
        return f"{nulls} null"
    if spec.name == "content_not_blank":
        texts = column.dropna().astype(str)
        if texts.empty:
            return "all null"
        blank = int((texts.str.strip() == "").sum())
        lengths = texts.str.len()
        return f"{blank} blank; {lengths.min()}-{lengths.max()} characters"
    if spec.name == "extraction_known":
        counts = column.dropna().astype(str).value_counts().sort_index()
        return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "all null"
    values = column.dropna()
    if values.empty:
        return "all null"
    text = f"min {_show(values.min())}, max {_show(values.max())}"
    return text + (f", {nulls} null" if nulls else "")


def _example(row: dict[str, Any], spec: QualityExpectation) -> FailingExample:
    value = ", ".join(f"{c}={_show(row.get(c))}" for c in spec.columns)
    if len(spec.columns) == 1:
        value = _show(row.get(spec.columns[0]))
    rel = row.get("relative_path")
    return FailingExample(
        chunk_id=str(row.get("chunk_id")),
        relative_path=None if rel is None else str(rel),
        value=value,
    )


def ephemeral_context() -> EphemeralDataContext:
    """An in-memory great-expectations context: no files, no analytics, no progress bars."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def build_suite(specs: Sequence[QualityExpectation], name: str = "chunks") -> ExpectationSuite:
    """A great-expectations suite of ``specs``; each carries its name in ``meta``."""
    import great_expectations as gx

    suite = gx.ExpectationSuite(name=name)
    for spec in specs:
        expectation = spec.build()
        expectation.meta = {"varagity": spec.name}
        suite.add_expectation(expectation)
    return suite


def validate_chunks(
    frame: pd.DataFrame,
    specs: Sequence[QualityExpectation],
    *,
    max_examples: int = MAX_EXAMPLES,
) -> QualityReport:
    """Run ``specs`` over a chunk frame in an ephemeral great-expectations context.

    Args:
        frame: Chunk rows (see :func:`load_chunk_frame` / :func:`chunk_frame`).
        specs: The expectations to run (see :func:`chunk_expectations`).
        max_examples: Failing chunks to name per expectation.

    Returns:
        One :class:`ExpectationOutcome` per spec, in the order given.
    """
    frame = chunk_frame(frame)
    context = ephemeral_context()
    batch = (
        context.data_sources.add_pandas("varagity")
        .add_dataframe_asset("chunks")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(
        build_suite(specs),
        result_format={
            "result_format": "SUMMARY",
            "unexpected_index_column_names": ["chunk_id", "relative_path"],
            "partial_unexpected_count": max_examples,
        },
    )
    by_name = {
        (r.expectation_config.meta or {}).get("varagity"): r
        for r in result.results
        if r.expectation_config is not None
    }
    outcomes = []
    for spec in specs:
        r = by_name.get(spec.name)
        raised = r is None or bool((r.exception_info or {}).get("raised_exception"))
        if r is None or raised:
            message = "no result" if r is None else str(r.exception_info.get("exception_message"))
            outcomes.append(
                ExpectationOutcome(
                    name=spec.name,
                    description=spec.description,
                    column=spec.column,
                    success=False,
                    observed="not evaluated",
                    element_count=len(frame),
                    unexpected_count=0,
                    error=message,
                )
            )
            continue
        res = r.result or {}
        indexes = res.get("partial_unexpected_index_list") or []
        outcomes.append(
            ExpectationOutcome(
                name=spec.name,
                description=spec.description,
                column=spec.column,
                success=bool(r.success),
                observed=_observed(spec, frame),
                element_count=int(res.get("element_count", len(frame))),
                unexpected_count=int(res.get("unexpected_count") or 0),
                examples=tuple(_example(dict(row), spec) for row in indexes[:max_examples]),
            )
        )
    return QualityReport(
        n_chunks=len(frame),
        n_documents=int(frame["doc_id"].nunique()),
        outcomes=tuple(outcomes),
    )


def check_chunks(
    pg: PgVectorStore,
    settings: Settings,
    doc_ids: Sequence[str] | None = None,
    groups: Sequence[Group] = GROUPS,
) -> QualityReport:
    """Read the chunks of ``doc_ids`` (the corpus when ``None``) and validate them.

    Args:
        pg: The store to read.
        settings: Source of the bounds (``CHUNK_SIZE``, ``EMBEDDING_DIM``).
        doc_ids: Documents to check; ``None`` checks every stored chunk.
        groups: Which expectation groups to run (``content``, ``embedding``).
    """
    frame = load_chunk_frame(pg, doc_ids)
    report = validate_chunks(frame, expectations_for(settings, groups))
    log.info(
        "checked %d chunk(s) of %d document(s): %d of %d expectation(s) failed",
        report.n_chunks,
        report.n_documents,
        len(report.failed),
        len(report.outcomes),
    )
    return report
