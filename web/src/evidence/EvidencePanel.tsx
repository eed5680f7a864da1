/**
 * The evidence behind one answer: each source, why it ranked, and its lineage; for a
 * message-graph answer, the conversation days it cites and the entities and relations
 * the graph found. The list is `EvidenceList`; one passage a `SourceCard` (its page a
 * `PagePreview`), one day a `DayCard`. In developer mode `TurnDebug` follows: the
 * retrieval trace table, the stage timings, the prompt and the raw model output.
 */
import type { Evidence, Turn } from "../turns/state";
import { EvidenceList } from "./EvidenceList";
import { TurnDebug } from "./TurnDebug";

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
  /** Show how the answer was built (trace table, timings, prompt, raw output). */
  developerMode?: boolean;
}

/** What was searched for (the condensed query when the chat engine rewrote the question), and how. */
function SearchedFor({ retrieval }: { retrieval: Evidence }) {
  return (
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
  );
}

/** The panel for the shown turn; the focused source is highlighted. */
export function EvidencePanel({
  turn,
  focusedSource,
  dagsterUrl,
  developerMode = false,
}: EvidencePanelProps) {
  const retrieval = turn?.retrieval ?? null;
  return (
    <aside className="evidence" aria-labelledby="evidence-heading">
      <h2 id="evidence-heading">Evidence</h2>
      {turn === null && <p className="muted">The passages behind an answer appear here.</p>}
      {turn !== null && retrieval === null && <p className="muted">{NO_EVIDENCE[turn.status]}</p>}
      {turn !== null && retrieval !== null && (
        <>
          <SearchedFor retrieval={retrieval} />
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
          {developerMode && <TurnDebug turn={turn} retrieval={retrieval} />}
        </>
      )}
    </aside>
  );
}
