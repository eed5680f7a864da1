/**
 * The evidence behind one answer: each source, why it ranked, and its lineage; for a
 * message-graph answer, the conversation days it cites and the entities and relations
 * the graph found.
 */
import type { DaySource, GraphEvidence, Source } from "../api/types";
import { routeHash } from "../app/route";
import { sourceElementId } from "../chat/citations";
import type { Evidence, Turn } from "../chat/state";
import { partitionUrl } from "../evidence/dagster";
import { markedPieces } from "../evidence/quotes";
import { traceBadges } from "../evidence/trace";
import { SourceFeedback } from "./Feedback";
import { PagePreview } from "./PagePreview";

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
      data-chunk-id={source.chunk_id}
    >
      <h3 id={titleId}>
        <span className="source-n">[{source.n}]</span> {source.file_name}
        {cited && <span className="pill">cited</span>}
        <SourceFeedback turnId={turnId} n={source.n} />
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
      <div className="source-body">
        <PagePreview source={source} />
        <blockquote className="content">
          {markedPieces(source.content, source.quotes).map((piece, i) =>
            piece.quoted ? (
              <mark key={i} className="quote" title="The answer rests on this text">
                {piece.text}
              </mark>
            ) : (
              piece.text
            ),
          )}
        </blockquote>
      </div>
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

function DayCard({
  turnId,
  day,
  cited,
  focused,
}: {
  turnId: string;
  day: DaySource;
  cited: boolean;
  focused: boolean;
}) {
  const id = sourceElementId(turnId, day.n);
  const classes = ["source", "day-card", focused && "is-focused", cited && "is-cited"]
    .filter(Boolean)
    .join(" ");
  const count = day.message_guids.length;
  return (
    <li
      id={id}
      className={classes}
      tabIndex={-1}
      aria-labelledby={`${id}-title`}
      aria-current={focused ? "true" : undefined}
      data-doc-key={day.doc_key}
    >
      <h3 id={`${id}-title`}>
        <span className="source-n">[{day.n}]</span> {day.thread_name}
        {cited && <span className="pill">cited</span>}
      </h3>
      <dl className="meta">
        <div>
          <dt>Day</dt>
          <dd>{day.span.replace("..", " \u2013 ")}</dd>
        </div>
        <div>
          <dt>Messages</dt>
          <dd>{count}</dd>
        </div>
        <div>
          <dt>Key</dt>
          <dd>
            <code>{day.doc_key}</code>
          </dd>
        </div>
      </dl>
      <blockquote className="content transcript">{day.excerpt}</blockquote>
      <a className="lineage" href={routeHash({ view: "graph", entity: null, day: day.doc_key })}>
        The whole day on the Graph screen
        <span className="visually-hidden">
          {" "}
          ({day.thread_name}, {day.span})
        </span>
      </a>
    </li>
  );
}

/** What the graph found besides the days: its entities and relations. */
function GraphFindings({ graph }: { graph: GraphEvidence }) {
  if (graph.entities.length === 0 && graph.relations.length === 0) return null;
  return (
    <section className="graph-findings" aria-labelledby="graph-findings-heading">
      <h3 id="graph-findings-heading">
        Found in the message graph <span className="muted">({graph.mode} mode)</span>
      </h3>
      {graph.entities.length > 0 && (
        <ul className="entity-chips" aria-label="Entities">
          {graph.entities.map((entity) => (
            <li key={entity.name} title={entity.description}>
              <a href={routeHash({ view: "graph", entity: entity.name, day: null })}>
                <span className={`entity-type type-${entity.type.toLowerCase()}`}>{entity.type}</span>{" "}
                {entity.name}
              </a>
            </li>
          ))}
        </ul>
      )}
      {graph.relations.length > 0 && (
        <ul className="relations" aria-label="Relations">
          {graph.relations.map((relation) => (
            <li key={`${relation.source}\u0000${relation.target}`} title={relation.description}>
              <strong>{relation.source}</strong> {"\u2194"} <strong>{relation.target}</strong>
              {relation.keywords && <span className="muted">: {relation.keywords}</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The shown answer's evidence: document passages, or conversation days. */
function EvidenceList({
  turn,
  retrieval,
  focusedSource,
  dagsterUrl,
}: {
  turn: Turn;
  retrieval: Evidence;
  focusedSource: number | null;
  dagsterUrl: string | null;
}) {
  if (retrieval.corpus === "graph") {
    return (
      <>
        {retrieval.days.length === 0 ? (
          <p className="muted">No conversation day matched.</p>
        ) : (
          <ol className="sources days">
            {retrieval.days.map((day) => (
              <DayCard
                key={day.doc_key}
                turnId={turn.id}
                day={day}
                cited={turn.cited.includes(day.n)}
                focused={focusedSource === day.n}
              />
            ))}
          </ol>
        )}
        {retrieval.graph && <GraphFindings graph={retrieval.graph} />}
        <p className="day-grain">
          Day-grain evidence: each card is a whole conversation day, not a single message. A citation points
          at the day; the message it rests on is somewhere in that day.
        </p>
      </>
    );
  }
  if (retrieval.sources.length === 0) return <p className="muted">Nothing in the corpus matched.</p>;
  return (
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
          {retrieval.degraded && (
            <p className="notice notice-warn degraded" role="note">
              <strong>Answered from the documents.</strong> {retrieval.degraded}
            </p>
          )}
          <EvidenceList
            turn={turn}
            retrieval={retrieval}
            focusedSource={focusedSource}
            dagsterUrl={dagsterUrl}
          />
        </>
      )}
    </aside>
  );
}
