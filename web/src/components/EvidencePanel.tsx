/** The evidence behind one answer: each source, why it ranked, and its lineage. */
import type { Source } from "../api/types";
import { sourceElementId } from "../chat/citations";
import type { Turn } from "../chat/state";
import { partitionUrl } from "../evidence/dagster";
import { traceBadges } from "../evidence/trace";

const NO_EVIDENCE: Record<Turn["status"], string> = {
  retrieving: "Searching the corpus\u2026",
  answering: "Searching the corpus\u2026",
  done: "No evidence was retrieved.",
  stopped: "Stopped before the evidence arrived.",
  error: "The request failed before any evidence arrived.",
};

interface EvidencePanelProps {
  turn: Turn | null;
  focusedSource: number | null;
  dagsterUrl: string | null;
}

function SourceCard({
  turnId,
  source,
  cited,
  focused,
  dagsterUrl,
}: {
  turnId: string;
  source: Source;
  cited: boolean;
  focused: boolean;
  dagsterUrl: string | null;
}) {
  const titleId = `${sourceElementId(turnId, source.n)}-title`;
  const badges = traceBadges(source.trace ?? null);
  const classes = ["source", focused && "is-focused", cited && "is-cited"].filter(Boolean).join(" ");
  return (
    <li
      id={sourceElementId(turnId, source.n)}
      className={classes}
      tabIndex={-1}
      aria-labelledby={titleId}
      aria-current={focused ? "true" : undefined}
    >
      <h3 id={titleId}>
        <span className="source-n">[{source.n}]</span> {source.file_name}
        {cited && <span className="pill">cited</span>}
      </h3>
      {badges.length > 0 && (
        <ul className="badges" aria-label="Ranking">
          {badges.map((badge) => (
            <li key={badge.kind} className={`badge badge-${badge.kind}`} title={badge.title}>
              {badge.label}
              <span className="visually-hidden">: {badge.title}</span>
            </li>
          ))}
        </ul>
      )}
      <dl className="meta">
        <div>
          <dt>File</dt>
          <dd>{source.relative_path}</dd>
        </div>
        {source.page != null && (
          <div>
            <dt>Page</dt>
            <dd>{source.page}</dd>
          </div>
        )}
        <div>
          <dt>Extraction</dt>
          <dd>{source.extraction}</dd>
        </div>
        <div>
          <dt>Chunk</dt>
          <dd>{source.chunk_index}</dd>
        </div>
      </dl>
      <blockquote className="content">{source.content}</blockquote>
      {source.context && (
        <p className="context">
          <span className="context-label">Context added at ingest:</span> {source.context}
        </p>
      )}
      {dagsterUrl && (
        <a
          className="lineage"
          href={partitionUrl(dagsterUrl, source.relative_path)}
          target="_blank"
          rel="noreferrer"
        >
          Lineage in Dagster
          <span className="visually-hidden"> for {source.relative_path} (opens in a new tab)</span>
        </a>
      )}
    </li>
  );
}

/** The panel for the shown turn; the focused source is highlighted. */
export function EvidencePanel({ turn, focusedSource, dagsterUrl }: EvidencePanelProps) {
  const retrieval = turn?.retrieval ?? null;
  return (
    <aside className="evidence" aria-labelledby="evidence-heading">
      <h2 id="evidence-heading">Evidence</h2>
      {turn === null && <p className="muted">The passages behind an answer appear here.</p>}
      {turn !== null && retrieval === null && <p className="muted">{NO_EVIDENCE[turn.status]}</p>}
      {turn !== null && retrieval !== null && (
        <>
          <p className="searched-for">
            <span className="label">Searched for</span> <q>{retrieval.condensed_query || retrieval.query}</q>
            {retrieval.condensed_query && (
              <span className="muted">(your question, rewritten with the conversation)</span>
            )}
            {(retrieval.method || retrieval.chat_engine) && (
              <span className="method">
                {[retrieval.method, retrieval.chat_engine].filter(Boolean).join(" \u00b7 ")}
              </span>
            )}
          </p>
          {retrieval.sources.length === 0 ? (
            <p className="muted">Nothing in the corpus matched.</p>
          ) : (
            <ol className="sources">
              {retrieval.sources.map((source) => (
                <SourceCard
                  key={source.chunk_id}
                  turnId={turn.id}
                  source={source}
                  cited={turn.cited.includes(source.n)}
                  focused={focusedSource === source.n}
                  dagsterUrl={dagsterUrl}
                />
              ))}
            </ol>
          )}
        </>
      )}
    </aside>
  );
}
