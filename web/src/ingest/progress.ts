/** Ingest jobs (Dagster backfills): where they are followed, their events, how a job's progress reads. */
import { jobKind, type JobEvent } from "../api/jobs";
import type { SseMessage } from "../api/sse";
import type { IngestProgress } from "../api/types";

/** An ingest or re-ingest job: `/api/ingest/{id}` and its `/events`. */
export const ingestJobs = jobKind<IngestProgress>({
  base: "/api/ingest",
  id: (job) => job.job_id,
  valid: (data) => typeof data.job_id === "string" && typeof data.files === "object",
  needs: "job_id and files",
  done: (job) => job.done,
});

export type IngestEvent = JobEvent<IngestProgress>;

/** The typed form of one `/api/ingest/{id}/events` message, or `null` for an unknown event. */
export function parseIngestEvent(message: SseMessage): IngestEvent | null {
  return ingestJobs.parse(message);
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
