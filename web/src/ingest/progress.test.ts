import { describe, expect, it } from "vitest";

import type { IngestProgress } from "../api/types";
import { filesLine, jobHeadline, outcome, parseIngestEvent } from "./progress";

function job(overrides: Partial<IngestProgress> = {}): IngestProgress {
  return {
    job_id: "abc",
    kind: "reingest",
    source: "api",
    status: "REQUESTED",
    done: false,
    succeeded: false,
    title: null,
    created_at: "2026-03-01T10:00:00Z",
    ended_at: null,
    files: { targeted: 4, materialized: 1, failed: 0, in_progress: 3 },
    dagster_url: "http://127.0.0.1:3000/runs/b/abc",
    paths: ["a.md", "b.md", "c.md", "d.md"],
    assets: [],
    runs: [],
    failures: [],
    error: null,
    ...overrides,
  };
}

describe("ingest progress", () => {
  it("reads progress, done and error events; ignores unknown ones", () => {
    const progress = parseIngestEvent({ event: "progress", data: JSON.stringify(job()), id: null });
    expect(progress?.type).toBe("progress");
    const finished = job({ done: true, succeeded: true, status: "COMPLETED_SUCCESS" });
    expect(parseIngestEvent({ event: "done", data: JSON.stringify(finished), id: null })).toEqual({
      type: "done",
      data: finished,
    });
    expect(
      parseIngestEvent({ event: "error", data: '{"code":"dagster_unavailable","message":"down"}', id: null }),
    ).toEqual({ type: "error", data: { code: "dagster_unavailable", message: "down" } });
    expect(parseIngestEvent({ event: "ping", data: "{}", id: null })).toBeNull();
    expect(() => parseIngestEvent({ event: "progress", data: "{}", id: null })).toThrow(/job_id/);
    expect(() => parseIngestEvent({ event: "done", data: "not json", id: null })).toThrow(/malformed/);
  });

  it("summarises where a job stands", () => {
    expect(outcome(job())).toBe("running");
    expect(jobHeadline(job())).toBe("Re-ingest running (requested)");
    expect(filesLine(job())).toBe("1 of 4 files indexed \u00b7 3 in progress");
    const failed = job({
      done: true,
      status: "COMPLETED_FAILED",
      files: { targeted: 1, materialized: 0, failed: 1, in_progress: 0 },
    });
    expect(outcome(failed)).toBe("failed");
    expect(jobHeadline(failed)).toBe("Re-ingest failed (completed failed)");
    expect(filesLine(failed)).toBe("0 of 1 file indexed \u00b7 1 failed");
    expect(jobHeadline(job({ kind: "ingest", done: true, succeeded: true }))).toBe("Ingest complete");
  });
});
