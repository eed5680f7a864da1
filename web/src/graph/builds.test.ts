import { describe, expect, it } from "vitest";

import { graphBuild } from "../test/fixtures";
import { buildHeadline, liveBuild, parseBuildEvent, progressLine, resumable, shouldSwitch } from "./builds";
import { formatBytes } from "../shared/format";

describe("graph builds", () => {
  it("reads progress, done and error events; refuses a payload that is not a build", () => {
    const running = graphBuild();
    expect(parseBuildEvent({ event: "progress", data: JSON.stringify(running), id: null })).toEqual({
      type: "progress",
      data: running,
    });
    const done = graphBuild({ state: "succeeded", done: true, status: "SUCCESS" });
    expect(parseBuildEvent({ event: "done", data: JSON.stringify(done), id: null })?.type).toBe("done");
    expect(
      parseBuildEvent({ event: "error", data: '{"code":"dagster_unavailable","message":"down"}', id: null }),
    ).toEqual({ type: "error", data: { code: "dagster_unavailable", message: "down" } });
    expect(parseBuildEvent({ event: "ping", data: "{}", id: null })).toBeNull();
    expect(() => parseBuildEvent({ event: "progress", data: "{}", id: null })).toThrow(/run_id and state/);
    expect(() => parseBuildEvent({ event: "done", data: "[1]", id: null })).toThrow(/not an object/);
  });

  it("says where a build stands in days", () => {
    expect(progressLine(graphBuild())).toBe("1 of 2 days processed \u00b7 1 processing");
    expect(
      progressLine(
        graphBuild({ progress: { total: 3, processed: 1, processing: 0, pending: 1, failed: 1 } }),
      ),
    ).toBe("1 of 3 days processed \u00b7 1 pending \u00b7 1 failed");
    expect(progressLine(graphBuild({ progress: null }))).toBe("reading the archive");
    const nothing = graphBuild({ progress: null, done: true, state: "succeeded" });
    expect(progressLine(nothing)).toBe("no day needed extracting");
    const killed = graphBuild({ progress: null, done: true, state: "canceled" });
    expect(progressLine(killed)).toBe("stopped before extracting any day");
    expect(progressLine(graphBuild({ kind: "remove", path: null, progress: null }))).toMatch(/removed days/);
    expect(buildHeadline(graphBuild())).toBe("Build of chat.db running");
    expect(buildHeadline(graphBuild({ state: "canceled", done: true }))).toBe("Build of chat.db killed");
  });

  it("names a rebuild by its days and a reset by what it left", () => {
    const days = graphBuild({ kind: "rebuild", path: null, first_day: "2026-03-03", last_day: "2026-03-04" });
    expect(buildHeadline(days)).toBe("Rebuild of 2026-03-03 to 2026-03-04 running");
    expect(buildHeadline({ ...days, last_day: "2026-03-03" })).toBe("Rebuild of 2026-03-03 running");
    const every = graphBuild({ kind: "rebuild", path: null, state: "succeeded", done: true });
    expect(buildHeadline(every)).toBe("Rebuild of every day finished");
    expect(progressLine({ ...every, progress: null })).toBe("no day in the range");
    expect(progressLine({ ...every, progress: null, done: false, state: "running" })).toBe(
      "reading the archives",
    );
    const reset = graphBuild({ kind: "reset", path: null, progress: null, state: "running" });
    expect(buildHeadline(reset)).toBe("Reset running");
    expect(progressLine(reset)).toBe("emptying the graph");
    expect(progressLine({ ...reset, state: "succeeded", done: true })).toBe(
      "the graph is empty; its archives are kept",
    );
    // neither is resumed: launching a rebuild again extracts its days again
    expect(resumable({ ...every, state: "failed" })).toBe(false);
    expect(resumable({ ...reset, state: "failed", done: true })).toBe(false);
  });

  it("resumes builds that ended unfinished, and follows the newest live one", () => {
    expect(resumable(graphBuild())).toBe(false);
    expect(resumable(graphBuild({ state: "canceled", done: true }))).toBe(true);
    expect(resumable(graphBuild({ state: "failed", done: true }))).toBe(true);
    expect(resumable(graphBuild({ state: "succeeded", done: true }))).toBe(false);
    expect(resumable(graphBuild({ kind: "remove", path: null, state: "failed", done: true }))).toBe(false);
    const old = graphBuild({ run_id: "old", state: "succeeded", done: true });
    const live = graphBuild({ run_id: "live" });
    expect(liveBuild([old])).toBeNull();
    expect(liveBuild([live, old])?.run_id).toBe("live");
    // a queued build waits for the running one, which is the one to watch
    const queued = graphBuild({ run_id: "queued", state: "queued", status: "QUEUED", progress: null });
    expect(liveBuild([queued, live, old])?.run_id).toBe("live");
    expect(liveBuild([queued, old])?.run_id).toBe("queued");
  });

  it("switches to the running build when the followed one only waits in the queue", () => {
    const queued = graphBuild({ run_id: "queued", state: "queued", status: "QUEUED", progress: null });
    const running = graphBuild({ run_id: "running" });
    const ended = graphBuild({ run_id: "ended", state: "succeeded", done: true });
    expect(shouldSwitch(null, running)).toBe(true);
    expect(shouldSwitch(ended, queued)).toBe(true);
    expect(shouldSwitch(queued, running)).toBe(true);
    expect(shouldSwitch(running, queued)).toBe(false);
    expect(shouldSwitch(running, running)).toBe(false);
    expect(shouldSwitch(queued, null)).toBe(false);
  });

  it("formats byte counts", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1_480_000)).toBe("1.5 MB");
    expect(formatBytes(250_000)).toBe("250 kB");
  });
});
