/**
 * Developer mode's "how this answer was built": the retrieval trace as a table (each
 * passage's rank and score in the semantic and BM25 arms, its fused score and rank, the
 * reranker's score and move where one ran, its final rank), the time of every stage,
 * and, when the server sent them (the request asked with `debug`), the prompt sent to
 * the model and the model's raw output before the quote check and citation clean-up.
 * The same record `varagity ask --verbose 1|2` prints (`varagity_cli/render.py`).
 */
import type { AnswerDebug, RetrievalTrace, Source } from "../api/types";
import type { Evidence, Turn } from "../turns/state";
import { formatScore } from "./trace";

const EMPTY = "\u2013";

function arm(rank: number | null | undefined, score: number | null | undefined): string {
  if (rank == null) return EMPTY;
  return score == null ? `#${rank}` : `#${rank} (${formatScore(score)})`;
}

function moved(delta: number | null | undefined): string {
  if (delta == null) return EMPTY;
  return delta > 0 ? `+${delta}` : delta < 0 ? `\u2212${-delta}` : "\u00b10";
}

function sourceLabel(source: Source): string {
  const page = source.page == null ? "" : ` p.${source.page}`;
  return `${source.relative_path}${page} #${source.chunk_index}`;
}

/** The retrieval trace of a document answer's passages, one row each. */
export function TraceTable({ sources }: { sources: Source[] }) {
  if (sources.length === 0) return <p className="muted">No passages were retrieved.</p>;
  const traces: (RetrievalTrace | null)[] = sources.map((s) => s.trace ?? null);
  const reranked = traces.some((t) => t?.rerank_score != null);
  return (
    <div className="table-scroll">
      <table className="debug-table trace-table">
        <caption className="visually-hidden">Retrieval trace</caption>
        <thead>
          <tr>
            <th className="num">n</th>
            <th>Source</th>
            <th>Semantic</th>
            <th>BM25</th>
            <th className="num">Fused</th>
            <th className="num">Fused rank</th>
            {reranked && <th className="num">Rerank</th>}
            {reranked && <th className="num">Moved</th>}
            <th className="num">Final</th>
          </tr>
        </thead>
        <tbody>
          {sources.map((source, i) => {
            const trace = traces[i];
            return (
              <tr key={source.chunk_id}>
                <td className="num">{source.n}</td>
                <td>{sourceLabel(source)}</td>
                <td>{arm(trace?.semantic_rank, trace?.semantic_score)}</td>
                <td>{arm(trace?.bm25_rank, trace?.bm25_score)}</td>
                <td className="num">{trace ? formatScore(trace.fused_score) : EMPTY}</td>
                <td className="num">{trace?.fused_rank ?? EMPTY}</td>
                {reranked && (
                  <td className="num">
                    {trace?.rerank_score == null ? EMPTY : formatScore(trace.rerank_score)}
                  </td>
                )}
                {reranked && <td className="num">{moved(trace?.rerank_delta)}</td>}
                <td className="num">{trace?.final_rank ?? EMPTY}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** Each stage's time in milliseconds, in the order the server recorded them. */
export function TimingsTable({ timings }: { timings: Record<string, number> }) {
  const stages = Object.entries(timings);
  if (stages.length === 0) return <p className="muted">No stage timings yet.</p>;
  return (
    <table className="debug-table timings-table">
      <caption className="visually-hidden">Stage timings</caption>
      <thead>
        <tr>
          <th>Stage</th>
          <th className="num">ms</th>
        </tr>
      </thead>
      <tbody>
        {stages.map(([stage, ms]) => (
          <tr key={stage}>
            <td>{stage}</td>
            <td className="num">{ms.toFixed(1)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The messages sent to the model and what it wrote, as it wrote it. */
export function PromptAndOutput({ debug }: { debug: AnswerDebug }) {
  return (
    <>
      <details className="debug-prompt">
        <summary>Prompt sent to the model ({debug.messages.length} messages)</summary>
        {debug.messages.length === 0 && (
          <p className="muted">No model was asked: the reply is fixed or computed.</p>
        )}
        {debug.messages.map((message, i) => (
          <section key={i} className="prompt-message">
            <h5>{message.role}</h5>
            <pre>{message.content}</pre>
          </section>
        ))}
      </details>
      <details className="debug-raw">
        <summary>Raw model output (before quote checks and citation cleaning)</summary>
        <pre>{debug.raw_output}</pre>
      </details>
    </>
  );
}

/** The developer-mode section of the evidence panel for one turn. */
export function TurnDebug({ turn, retrieval }: { turn: Turn; retrieval: Evidence }) {
  return (
    <section className="turn-debug" aria-labelledby={`debug-${turn.id}`}>
      <h3 id={`debug-${turn.id}`}>
        How this answer was built <span className="muted">(developer mode)</span>
      </h3>
      {retrieval.corpus === "rag" && (
        <>
          <h4>Retrieval trace</h4>
          <TraceTable sources={retrieval.sources} />
        </>
      )}
      <h4>Stage timings</h4>
      <TimingsTable timings={turn.timings_ms} />
      {turn.debug ? (
        <PromptAndOutput debug={turn.debug} />
      ) : (
        turn.status === "done" && (
          <p className="muted">
            The prompt and raw output are kept only for answers asked while developer mode is on.
          </p>
        )
      )}
    </section>
  );
}
