/** Thumbs on an answer (with "which source answers?" on a thumbs-down) and on one source. */
import type { Turn } from "../turns/state";
import { evidenceCount } from "../turns/state";
import { markAnswering, toggle, type Rating, type Target } from "./state";
import { useFeedback } from "./useFeedback";

function Thumbs({ messageId, target, label }: { messageId: string; target: Target; label: string }) {
  const feedback = useFeedback();
  if (feedback === null) return null;
  const mark = feedback.markOf(messageId, target);
  const button = (rating: Rating, glyph: string, words: string) => (
    <button
      type="button"
      className={`thumb thumb-${rating}`}
      aria-pressed={mark?.rating === rating}
      aria-label={`${words} ${label}`}
      title={`${words} ${label}`}
      onClick={() => void feedback.rate(messageId, target, toggle(mark, rating))}
    >
      {glyph}
    </button>
  );
  return (
    <span className="thumbs" role="group" aria-label={`Rate ${label}`}>
      {button("up", "\u{1F44D}", "Good:")}
      {button("down", "\u{1F44E}", "Bad:")}
    </span>
  );
}

/** Under a saved answer: thumbs, and after a thumbs-down the question of which source answers. */
export function AnswerFeedback({ turn }: { turn: Turn }) {
  const feedback = useFeedback();
  const messageId = turn.message_id;
  if (feedback === null || !messageId || turn.status !== "done") return null;
  const mark = feedback.markOf(messageId, null);
  const notice = feedback.noticeOf(messageId);
  const sources = turn.retrieval?.corpus === "rag" ? evidenceCount(turn.retrieval) : 0;
  const answering = mark?.none_answers ? "none" : (mark?.answered_by ?? "");
  return (
    <div className="answer-feedback">
      <Thumbs messageId={messageId} target={null} label="this answer" />
      {mark?.rating === "down" && sources > 0 && (
        <label className="answered-by">
          Which source answers the question?{" "}
          <select
            value={String(answering)}
            onChange={(event) => {
              const value = event.target.value;
              if (value === "") return;
              void feedback.rate(
                messageId,
                null,
                markAnswering(mark, value === "none" ? "none" : Number(value)),
              );
            }}
          >
            <option value="">(not marked)</option>
            {Array.from({ length: sources }, (_, i) => (
              <option key={i + 1} value={String(i + 1)}>
                Source {i + 1}
              </option>
            ))}
            <option value="none">None of them</option>
          </select>
        </label>
      )}
      {notice && (
        <span role="status" className={notice.failed ? "feedback-notice error-text" : "feedback-notice"}>
          {notice.text}
        </span>
      )}
    </div>
  );
}

/** On an evidence card: thumbs on source `n` of the turn's answer (once it is saved). */
export function SourceFeedback({ turnId, n }: { turnId: string; n: number }) {
  const feedback = useFeedback();
  const messageId = feedback?.messageIdOf(turnId);
  if (!messageId) return null;
  return <Thumbs messageId={messageId} target={n} label={`source ${n}`} />;
}
