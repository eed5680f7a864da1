import { describe, expect, it } from "vitest";

import { backupRun, bundle } from "../test/fixtures";
import { countsText, driftLines, liveRun, parseBackupEvent, replaceText, runLine } from "./bundles";

describe("backup bundles", () => {
  it("reads counts in a fixed order with readable names", () => {
    expect(countsText({ chunks: 340, documents: 12 })).toBe("12 documents \u00b7 340 chunks");
    expect(countsText({ messages: 90, thread_days: 4 })).toBe("4 transcript days \u00b7 90 messages");
    expect(countsText({})).toBe("nothing");
  });

  it("names what a restore replaces and with what", () => {
    const text = replaceText("rag", { documents: 3, chunks: 20 }, bundle());
    expect(text).toContain("replaces the documents corpus (now 3 documents \u00b7 20 chunks)");
    expect(text).toContain("with varagity-rag-20261108-1312.zip (12 documents \u00b7 340 chunks)");
    expect(replaceText("graph", {}, bundle({ counts: { thread_days: 2 } }))).toContain(
      "the message graph (now nothing)",
    );
  });

  it("lists drift setting by setting", () => {
    const b = bundle({ drift: [{ setting: "CHUNK_SIZE", bundle: "400", current: "800" }] });
    expect(driftLines(b)).toEqual(["CHUNK_SIZE was 400, is 800 here"]);
  });

  it("says what a run is doing, and what an export wrote", () => {
    expect(runLine(backupRun())).toBe("Export running: chunks 1200 of 5000");
    expect(runLine(backupRun({ total: 0, phase: "copy" }))).toBe("Export running: copy");
    const done = backupRun({ state: "succeeded", done: true, bundle: "b.zip" });
    expect(runLine(done)).toBe("Export finished: b.zip written and verified");
    const restore = backupRun({ kind: "restore", bundle: "b.zip", state: "failed", done: true });
    expect(runLine(restore)).toBe("Restore from b.zip failed");
  });

  it("follows the newest run still in flight", () => {
    const ended = backupRun({ run_id: "a", done: true, state: "succeeded" });
    const live = backupRun({ run_id: "b" });
    expect(liveRun([ended, live])?.run_id).toBe("b");
    expect(liveRun([ended])).toBeNull();
  });

  it("parses run events and refuses a payload without a run id", () => {
    const ok = parseBackupEvent({ event: "progress", data: JSON.stringify(backupRun()), id: "" });
    expect(ok?.type).toBe("progress");
    expect(parseBackupEvent({ event: "ping", data: "", id: "" })).toBeNull();
    expect(() => parseBackupEvent({ event: "done", data: "{}", id: "" })).toThrow(/run_id and state/);
    const err = parseBackupEvent({
      event: "error",
      data: '{"code":"dagster_unavailable","message":"down"}',
      id: "",
    });
    expect(err).toEqual({ type: "error", data: { code: "dagster_unavailable", message: "down" } });
  });
});
