/**
 * Following a long-running job over its event stream: the `progress` / `done` /
 * `error` events every job kind sends (an ingest job, a graph build, a backup run),
 * reading on (with a fresh GET) when the stream closes before the job is done, and a
 * kind's descriptor (`JobKind`): where its jobs are read, followed and killed.
 */
import { ApiError, getEvents, getJson, sendJson } from "./client";
import type { SseMessage } from "./sse";
import type { ErrorEvent } from "./types";

export type JobEvent<T> =
  { type: "progress"; data: T } | { type: "done"; data: T } | { type: "error"; data: ErrorEvent };

/**
 * The typed form of one job event, or `null` for an event this client does not know.
 * `valid` checks a `progress`/`done` payload; `needs` names what it requires (for the
 * error a malformed one throws).
 */
export function parseJobEvent<T>(
  message: SseMessage,
  valid: (data: Record<string, unknown>) => boolean,
  needs: string,
): JobEvent<T> | null {
  if (!["progress", "done", "error"].includes(message.event)) return null;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    throw new ApiError(
      200,
      "bad_event",
      `malformed \`${message.event}\` event: ${message.data.slice(0, 120)}`,
    );
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new ApiError(200, "bad_event", `\`${message.event}\` event is not an object`);
  }
  const body = data as Record<string, unknown>;
  if (message.event === "error") {
    return {
      type: "error",
      data: { code: String(body.code ?? "error"), message: String(body.message ?? "") },
    };
  }
  if (!valid(body)) throw new ApiError(200, "bad_event", `\`${message.event}\` event has no ${needs}`);
  return { type: message.event as "progress" | "done", data: body as T };
}

/** Reconnections tried when a progress stream ends before its job does. */
export const RECONNECTS = 3;

export interface JobSource<T> {
  /** The job's event stream. */
  events: (signal: AbortSignal) => AsyncGenerator<SseMessage>;
  parse: (message: SseMessage) => JobEvent<T> | null;
  /** The job's state now (read when the stream closed early). */
  read: (signal: AbortSignal) => Promise<T>;
  done: (job: T) => boolean;
}

/**
 * Follow a job until it is done, calling `onProgress` with every state seen; an
 * in-band `error` event throws it as an `ApiError`. Returns the final state.
 */
export async function followJob<T>(
  source: JobSource<T>,
  signal: AbortSignal,
  onProgress: (job: T) => void,
): Promise<T> {
  for (let attempt = 0; attempt <= RECONNECTS; attempt++) {
    for await (const message of source.events(signal)) {
      const event = source.parse(message);
      if (event === null) continue;
      if (event.type === "error") throw new ApiError(200, event.data.code, event.data.message);
      onProgress(event.data);
      if (event.type === "done") return event.data;
    }
    // the stream closed before `done` (a proxy timeout, an API restart): read the job, go on
    const now = await source.read(signal);
    onProgress(now);
    if (source.done(now)) return now;
  }
  throw new ApiError(
    0,
    "stream_incomplete",
    "The progress stream kept closing before the job finished; follow it in the Dagster UI.",
  );
}

/**
 * A kind of long-running job, all that following one needs: how a state names its job,
 * where its state and its event stream are read, how an event is checked, whether a
 * state is final, and how a job is killed (`null`: this kind cannot be).
 */
export interface JobKind<T> {
  id: (job: T) => string;
  events: (id: string, signal: AbortSignal) => AsyncGenerator<SseMessage>;
  read: (id: string, signal: AbortSignal) => Promise<T>;
  parse: (message: SseMessage) => JobEvent<T> | null;
  done: (job: T) => boolean;
  kill: ((id: string) => Promise<T>) | null;
}

/** A kind whose jobs can be killed. */
export type KillableJobKind<T> = JobKind<T> & { kill: (id: string) => Promise<T> };

/** A kind served the usual way, in a few lines (see `jobKind`). */
export interface JobKindSpec<T> {
  /**
   * Where its jobs live: `GET {base}/{id}` is a job's state, `GET {base}/{id}/events`
   * its stream, `POST {base}/{id}/kill` kills it (when `killable`).
   */
  base: string;
  id: (job: T) => string;
  /** Whether a `progress`/`done` payload is a state; `needs` names what it requires. */
  valid: (data: Record<string, unknown>) => boolean;
  needs: string;
  done: (job: T) => boolean;
  killable?: boolean;
}

/** The descriptor of a kind whose endpoints follow `spec.base`. */
export function jobKind<T>(spec: JobKindSpec<T> & { killable: true }): KillableJobKind<T>;
export function jobKind<T>(spec: JobKindSpec<T>): JobKind<T>;
export function jobKind<T>(spec: JobKindSpec<T>): JobKind<T> {
  const at = (id: string) => `${spec.base}/${encodeURIComponent(id)}`;
  return {
    id: spec.id,
    events: (id, signal) => getEvents(`${at(id)}/events`, signal),
    read: (id, signal) => getJson<T>(at(id), signal),
    parse: (message) => parseJobEvent<T>(message, spec.valid, spec.needs),
    done: spec.done,
    kill: spec.killable ? (id) => sendJson<T>("POST", `${at(id)}/kill`) : null,
  };
}

/** What `followJob` reads to follow the job `id` of `kind`. */
export function jobSource<T>(kind: JobKind<T>, id: string): JobSource<T> {
  return {
    events: (signal) => kind.events(id, signal),
    parse: kind.parse,
    read: (signal) => kind.read(id, signal),
    done: kind.done,
  };
}
