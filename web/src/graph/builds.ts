/** Graph builds (Dagster runs of `build_message_graph`): where they are followed and killed, how they read. */
import { jobKind, type JobEvent } from "../api/jobs";
import type { SseMessage } from "../api/sse";
import type { GraphBuild } from "../api/types";

/** A build or removal run: `/api/graph/builds/{run_id}`, its `/events` and `/kill`. */
export const graphBuilds = jobKind<GraphBuild>({
  base: "/api/graph/builds",
  id: (build) => build.run_id,
  valid: (data) => typeof data.run_id === "string" && typeof data.state === "string",
  needs: "run_id and state",
  done: (build) => build.done,
  killable: true,
});

/** The typed form of one `/api/graph/builds/{id}/events` message, or `null` for an unknown event. */
export function parseBuildEvent(message: SseMessage): JobEvent<GraphBuild> | null {
  return graphBuilds.parse(message);
}

/** "1 of 2 days processed · 1 processing · 0 pending": the build's days, or what it is doing. */
export function progressLine(build: GraphBuild): string {
  const p = build.progress;
  if (p === null) {
    if (build.kind === "remove") return "taking removed days out of the graph";
    if (!build.done) return "reading the archive";
    return build.state === "succeeded" ? "no day needed extracting" : "stopped before extracting any day";
  }
  const parts = [`${p.processed} of ${p.total} day${p.total === 1 ? "" : "s"} processed`];
  if (p.processing > 0) parts.push(`${p.processing} processing`);
  if (p.pending > 0) parts.push(`${p.pending} pending`);
  if (p.failed > 0) parts.push(`${p.failed} failed`);
  return parts.join(" \u00b7 ");
}

const STATE_TEXT: Record<GraphBuild["state"], string> = {
  queued: "queued",
  running: "running",
  succeeded: "finished",
  failed: "failed",
  canceled: "killed",
};

/** "Build of chat.db running": what the run does, to what, and where it stands. */
export function buildHeadline(build: GraphBuild): string {
  const what = build.kind === "remove" ? "Removal" : `Build of ${build.path ?? "the archives"}`;
  return `${what} ${STATE_TEXT[build.state]}`;
}

/** A build that ended without finishing can be launched again: it resumes where it stopped. */
export function resumable(build: GraphBuild): boolean {
  return build.done && build.kind === "build" && build.path !== null && build.state !== "succeeded";
}

/**
 * The build to follow on the screen: the newest running one, else the newest queued
 * one (a queued build waits for the running one: the graph has a single writer).
 */
export function liveBuild(builds: readonly GraphBuild[]): GraphBuild | null {
  return builds.find((b) => b.state === "running") ?? builds.find((b) => !b.done) ?? null;
}

/**
 * Whether the screen should follow `live` instead of `followed`: nothing is followed
 * (or it ended), or the followed build only waits in the queue while `live` runs.
 */
export function shouldSwitch(followed: GraphBuild | null, live: GraphBuild | null): boolean {
  if (live === null || live.run_id === followed?.run_id) return false;
  if (followed === null || followed.done) return true;
  return followed.state === "queued" && live.state === "running";
}
