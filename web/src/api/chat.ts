/** `POST /api/chat` as a typed stream of events (payload types from the OpenAPI document). */
import { ApiError, postEvents } from "./client";
import type { SseMessage } from "./sse";
import type {
  ChatRequest,
  DoneEvent,
  ErrorEvent,
  QueuedEvent,
  ReasoningEvent,
  RetrievalEvent,
  TokenEvent,
} from "./types";

/** One server-sent event of a chat stream, tagged by its SSE event name. */
export type ChatEvent =
  | { type: "retrieval"; data: RetrievalEvent }
  | { type: "queued"; data: QueuedEvent }
  | { type: "token"; data: TokenEvent }
  | { type: "reasoning"; data: ReasoningEvent }
  | { type: "done"; data: DoneEvent }
  | { type: "error"; data: ErrorEvent };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function malformed(message: SseMessage, why: string): ApiError {
  return new ApiError(
    200,
    "bad_event",
    `malformed \`${message.event}\` event (${why}): ${message.data.slice(0, 120)}`,
  );
}

/**
 * The typed form of one SSE message, or `null` for an event this client does not
 * know (newer servers may add some). Known events with the wrong shape throw.
 */
export function parseChatEvent(message: SseMessage): ChatEvent | null {
  const known = ["retrieval", "queued", "token", "reasoning", "done", "error"];
  if (!known.includes(message.event)) return null;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    throw malformed(message, "not JSON");
  }
  if (!isObject(data)) throw malformed(message, "not an object");
  switch (message.event) {
    case "retrieval":
      if (typeof data.query !== "string" || !Array.isArray(data.sources)) {
        throw malformed(message, "needs query and sources");
      }
      return { type: "retrieval", data: data as unknown as RetrievalEvent };
    case "queued":
      if (typeof data.position !== "number") throw malformed(message, "needs position");
      return {
        type: "queued",
        data: {
          position: data.position,
          // "context": blurbs for new files hold the model (older servers send no reason)
          reason: data.reason === "context" ? "context" : "answers",
          message: String(data.message ?? ""),
        },
      };
    case "token":
    case "reasoning":
      if (typeof data.delta !== "string") throw malformed(message, "needs delta");
      return { type: message.event, data: { delta: data.delta } };
    case "done":
      if (typeof data.answer !== "string" || !Array.isArray(data.cited)) {
        throw malformed(message, "needs answer and cited");
      }
      return { type: "done", data: data as unknown as DoneEvent };
    default:
      return {
        type: "error",
        data: { code: String(data.code ?? "error"), message: String(data.message ?? "") },
      };
  }
}

/** Ask a question; yields the typed events until the stream ends. `base` prefixes the path. */
export async function* streamChat(
  request: ChatRequest,
  signal?: AbortSignal,
  base = "",
): AsyncGenerator<ChatEvent> {
  for await (const message of postEvents(`${base}/api/chat`, request, signal)) {
    const event = parseChatEvent(message);
    if (event !== null) yield event;
  }
}
