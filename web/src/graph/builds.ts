/**
 * Graph builds (Dagster runs of `build_message_graph`, and the graph's other runs:
 * removals, rebuilds of days, resets): where they are followed and killed, how they read.
 */
import { jobKind, type JobEvent } from "../api/jobs";
import type { SseMessage } from "../api/sse";
import type { GraphBuild } from "../api/types";

/** A run of the graph: `/api/graph/builds/{run_id}`, its `/events` and `/kill`. */
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
    if (build.kind === "reset") {
      if (!build.done) return "emptying the graph";
      return build.state === "succeeded"
        ? "the graph is empty; its archives are kept"
        : "the graph was not emptied";
    }
    if (!build.done) return build.kind === "rebuild" ? "reading the archives" : "reading the archive";
    if (build.state !== "succeeded") return "stopped before extracting any day";
    return build.kind === "rebuild" ? "no day in the range" : "no day needed extracting";
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

/** "2026-03-03 to 2026-03-05", "2026-03-03", "every day": the days a rebuild extracts again. */
export function rebuildDays(build: GraphBuild): string {
  const { first_day: first, last_day: last } = build;
  if (!first || !last) return "every day";
  return first === last ? first : `${first} to ${last}`;
}

/** What the run does to the graph: "Build of chat.db", "Rebuild of every day", "Reset". */
export function buildWhat(build: GraphBuild): string {
  switch (build.kind) {
    case "remove":
      return "Removal";
    case "reset":
      return "Reset";
    case "rebuild":
      return `Rebuild of ${rebuildDays(build)}`;
    default:
      return `Build of ${build.path ?? "the archives"}`;
  }
}

/** "Build of chat.db running": what the run does, to what, and where it stands. */
export function buildHeadline(build: GraphBuild): string {
  return `${buildWhat(build)} ${STATE_TEXT[build.state]}`;
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
