/**
 * Thumbs up and down on answers and on their sources, as pure state: what each target
 * is rated now (the saved ratings a conversation loads, overridden by what was clicked
 * since), what a click changes, and the request that stores it.
 *
 * A target is the answer itself (`null`) or its source `n`. A thumbs-down on the answer
 * can also mark the source that does answer (`answered_by`) or say none does
 * (`none_answers`): such a question joins the corpus's feedback suite, which the
 * answer gate runs.
 */
import type { Feedback, FeedbackRequest } from "../api/types";

export type Rating = FeedbackRequest["rating"];
/** The answer (`null`) or one of its numbered sources. */
export type Target = number | null;

export interface FeedbackMark {
  rating: Rating;
  answered_by: number | null;
  none_answers: boolean;
  comment: string | null;
}

/** Ratings clicked in this session, by `targetKey`; `null`: taken back. */
export type FeedbackOverrides = Record<string, FeedbackMark | null>;

export function targetKey(messageId: string, target: Target): string {
  return `${messageId}:${target ?? "answer"}`;
}

/** The rating shown for a target: the session's click, else the saved one, else none. */
export function markOf(
  saved: readonly Feedback[] | undefined,
  overrides: FeedbackOverrides,
  messageId: string,
  target: Target,
): FeedbackMark | null {
  const key = targetKey(messageId, target);
  if (key in overrides) return overrides[key] ?? null;
  const row = saved?.find((f) => (f.source ?? null) === target);
  if (row === undefined) return null;
  return {
    rating: row.rating,
    answered_by: row.answered_by ?? null,
    none_answers: row.none_answers,
    comment: row.comment ?? null,
  };
}

/** A thumb clicked: the same thumb again takes the rating back; the other replaces it. */
export function toggle(current: FeedbackMark | null, rating: Rating): FeedbackMark | null {
  if (current?.rating === rating) return null;
  return { rating, answered_by: null, none_answers: false, comment: current?.comment ?? null };
}

/** A thumbs-down on the answer, marking source `n` as the one that answers (`"none"`: none does). */
export function markAnswering(current: FeedbackMark | null, answeredBy: number | "none"): FeedbackMark {
  return {
    rating: "down",
    answered_by: answeredBy === "none" ? null : answeredBy,
    none_answers: answeredBy === "none",
    comment: current?.comment ?? null,
  };
}

/** The `PUT /api/messages/{id}/feedback` body of a mark (passage marks only on the answer). */
export function requestFor(target: Target, mark: FeedbackMark): FeedbackRequest {
  const onAnswer = target === null && mark.rating === "down";
  return {
    rating: mark.rating,
    source: target,
    answered_by: onAnswer ? mark.answered_by : null,
    none_answers: onAnswer && mark.none_answers,
    comment: mark.comment,
  };
}

/** The confirmation shown once a mark is saved. */
export function describeMark(target: Target, mark: FeedbackMark | null): string {
  const what = target === null ? "the answer" : `source ${target}`;
  if (mark === null) return `Rating of ${what} removed.`;
  let text = `Thanks: ${mark.rating === "up" ? "thumbs up" : "thumbs down"} on ${what}.`;
  if (mark.answered_by !== null) text += ` Source ${mark.answered_by} marked as the passage that answers;`;
  else if (mark.none_answers) text += " Marked as answered by none of the sources;";
  if (mark.answered_by !== null || mark.none_answers) text += " the question joins the feedback suite.";
  return text;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "3 Dec 14:02" in local time ("3 Dec 2025 14:02" in another year than `now`'s). */
export function formatIndexAsOf(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const year = at.getFullYear() === now.getFullYear() ? "" : ` ${at.getFullYear()}`;
  const hh = String(at.getHours()).padStart(2, "0");
  const mm = String(at.getMinutes()).padStart(2, "0");
  return `${at.getDate()} ${MONTHS[at.getMonth()]}${year} ${hh}:${mm}`;
}
