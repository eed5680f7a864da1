/** Ratings of answers and their sources: `/api/messages/{message_id}/feedback`. */
import { sendCommand, sendJson } from "./client";
import type { Feedback, FeedbackRequest } from "./types";

function path(messageId: string): string {
  return `/api/messages/${encodeURIComponent(messageId)}/feedback`;
}

/** Store (or replace) the rating of an answer or of its source `body.source`. */
export function putFeedback(messageId: string, body: FeedbackRequest): Promise<Feedback> {
  return sendJson<Feedback>("PUT", path(messageId), body);
}

/** Take back the rating of the answer (`source` null) or of its source `n`. */
export function deleteFeedback(messageId: string, source: number | null): Promise<void> {
  return sendCommand("DELETE", source === null ? path(messageId) : `${path(messageId)}?source=${source}`);
}
