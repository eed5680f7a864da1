/** Ingest job events and how a job's progress reads. */
import { ApiError } from "../api/client";
import type { SseMessage } from "../api/sse";
import type { ErrorEvent, IngestProgress } from "../api/types";

export type IngestEvent =
  | { type: "progress"; data: IngestProgress }
  | { type: "done"; data: IngestProgress }
  | { type: "error"; data: ErrorEvent };

/** The typed form of one `/api/ingest/{id}/events` message, or `null` for an unknown event. */
export function parseIngestEvent(message: SseMessage): IngestEvent | null {
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
  if (typeof data !== "object" || data === null) {
    throw new ApiError(200, "bad_event", `\`${message.event}\` event is not an object`);
  }
  if (message.event === "error") {
    const body = data as Partial<ErrorEvent>;
    return {
      type: "error",
      data: { code: String(body.code ?? "error"), message: String(body.message ?? "") },
    };
  }
  const progress = data as IngestProgress;
  if (typeof progress.job_id !== "string" || typeof progress.files !== "object") {
    throw new ApiError(200, "bad_event", `\`${message.event}\` event has no job_id and files`);
  }
  return { type: message.event as "progress" | "done", data: progress };
}

export type JobOutcome = "running" | "succeeded" | "failed";

export function outcome(job: IngestProgress): JobOutcome {
  if (!job.done) return "running";
  return job.succeeded ? "succeeded" : "failed";
}

/** "3 of 4 files indexed · 1 in progress · 0 failed". */
export function filesLine(job: IngestProgress): string {
  const { targeted, materialized, in_progress, failed } = job.files;
  const parts = [`${materialized} of ${targeted} file${targeted === 1 ? "" : "s"} indexed`];
  if (in_progress > 0) parts.push(`${in_progress} in progress`);
  if (failed > 0) parts.push(`${failed} failed`);
  return parts.join(" \u00b7 ");
}

/** The headline of a job: what it is and where it stands. */
export function jobHeadline(job: IngestProgress): string {
  const what = job.kind === "reingest" ? "Re-ingest" : "Ingest";
  switch (outcome(job)) {
    case "running":
      return `${what} running (${job.status.toLowerCase().replace(/_/g, " ")})`;
    case "succeeded":
      return `${what} complete`;
    case "failed":
      return `${what} failed (${job.status.toLowerCase().replace(/_/g, " ")})`;
  }
}

/** An asset key ("search_index") as a stage name ("search index"). */
export function stageName(asset: string): string {
  return asset.replace(/_/g, " ");
}
