/** The questions asked so far and their streamed answers. */
import { evidenceCount, isLive, type Turn } from "../turns/state";
import { AnswerText, IndexAsOf } from "./Answer";
import { AnswerFeedback } from "../feedback/Feedback";

interface ConversationProps {
  turns: Turn[];
  shownTurnId: string | null;
  onCite: (turn: Turn, n: number) => void;
  onShowEvidence: (turn: Turn) => void;
  onRetry: (turn: Turn) => void;
}

const STATUS_TEXT: Record<Turn["status"], string> = {
  retrieving: "Searching the corpus\u2026",
  answering: "Answering\u2026",
  done: "Answered.",
  stopped: "Stopped.",
  error: "Failed.",
};

// pipeline order; a saved turn's timings come back from the database in another order
const STAGES = [
  "condense",
  "hyde_generate",
  "hyde_embed",
  "embed",
  "semantic",
  "bm25",
  "fusion",
  "rerank",
  "hydrate",
  "first_token",
  "generate",
  "total",
];

function stageRank(stage: string): number {
  const i = STAGES.indexOf(stage);
  return i === -1 ? STAGES.length - 1 : i; // unknown stages just before the total
}

function Timings({ timings }: { timings: Record<string, number> }) {
  const entries = Object.entries(timings).sort(([a], [b]) => stageRank(a) - stageRank(b));
  if (entries.length === 0) return null;
  return (
    <p className="timings">
      {entries.map(([stage, ms]) => `${stage.replace(/_/g, " ")} ${Math.round(ms)} ms`).join(" \u00b7 ")}
    </p>
  );
}

function TurnView({
  turn,
  shown,
  onCite,
  onShowEvidence,
  onRetry,
}: Omit<ConversationProps, "turns" | "shownTurnId"> & { turn: Turn; shown: boolean }) {
  const live = isLive(turn);
  const endedEarly = turn.status === "error" || turn.status === "stopped";
  const sourceCount = evidenceCount(turn.retrieval);
  return (
    <article className="turn" aria-labelledby={`${turn.id}-q`} data-status={turn.status}>
      <p className="question" id={`${turn.id}-q`}>
        <span className="visually-hidden">You asked: </span>
        {turn.question}
      </p>
      {turn.reasoning && (
        <details className="reasoning">
          <summary>Reasoning</summary>
          <p>{turn.reasoning}</p>
        </details>
      )}
      {(turn.answer || live) && (
        <div className="answer" aria-busy={live}>
          <span className="visually-hidden">Answer: </span>
          {turn.answer ? (
            <AnswerText
              turnId={turn.id}
              text={turn.answer}
              sourceCount={sourceCount}
              onCite={(n) => onCite(turn, n)}
            />
          ) : (
            <span className="placeholder">
              {turn.queue && live ? turn.queue.message : STATUS_TEXT[turn.status]}
            </span>
          )}
          {live && turn.answer && <span className="caret" aria-hidden="true" />}
        </div>
      )}
      {turn.error && (
        <div className="error" role="alert">
          <p>
            <strong>{turn.error.message || "The answer failed."}</strong> <code>{turn.error.code}</code>
          </p>
        </div>
      )}
      <footer className="turn-footer">
        {/* announced to screen readers throughout; shown only when the turn ended early */}
        <span role="status" className={endedEarly ? "status" : "visually-hidden"}>
          {STATUS_TEXT[turn.status]}
        </span>
        {endedEarly && (
          <button type="button" onClick={() => onRetry(turn)}>
            Retry
          </button>
        )}
        {!shown && turn.retrieval && (
          <button type="button" className="link-button" onClick={() => onShowEvidence(turn)}>
            Show evidence
          </button>
        )}
        {turn.status === "done" && <Timings timings={turn.timings_ms} />}
        {turn.status === "done" && <IndexAsOf at={turn.index_as_of} />}
        <AnswerFeedback turn={turn} />
      </footer>
    </article>
  );
}

/** Every turn, oldest first. */
export function Conversation({ turns, shownTurnId, ...handlers }: ConversationProps) {
  if (turns.length === 0) {
    return (
      <div className="empty">
        <p>Ask a question about the documents in your corpus folder.</p>
        <p>
          The answer streams in with numbered citations; the passages it rests on, and why each ranked where
          it did, appear under Evidence.
        </p>
      </div>
    );
  }
  return (
    <ol className="turns" aria-label="Conversation">
      {turns.map((turn) => (
        <li key={turn.id}>
          <TurnView turn={turn} shown={turn.id === shownTurnId} {...handlers} />
        </li>
      ))}
    </ol>
  );
}
