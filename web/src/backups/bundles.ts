/** Backup bundles and their runs as the corpus and graph screens show them. */
import { jobKind, type JobEvent, type JobKind } from "../api/jobs";
import type { SseMessage } from "../api/sse";
import type { BackupRunInfo, BundleInfo, Corpus } from "../api/types";

function runsOf(corpus: Corpus): JobKind<BackupRunInfo> {
  return jobKind<BackupRunInfo>({
    base: `/api/backups/${corpus}/runs`,
    id: (run) => run.run_id,
    valid: (data) => typeof data.run_id === "string" && typeof data.state === "string",
    needs: "run_id and state",
    done: (run) => run.done,
  });
}

/** A corpus's export and restore runs: `/api/backups/{corpus}/runs/{run_id}` and its `/events`. */
export const backupRuns: Record<Corpus, JobKind<BackupRunInfo>> = {
  rag: runsOf("rag"),
  graph: runsOf("graph"),
};

/** The typed form of one `/api/backups/{corpus}/runs/{id}/events` message, or `null`. */
export function parseBackupEvent(message: SseMessage): JobEvent<BackupRunInfo> | null {
  return backupRuns.rag.parse(message);
}

/** The count names in the order people read them. */
const ORDER = ["documents", "chunks", "thread_days", "messages", "entities", "relations"];

/** "12 documents · 340 chunks" (`thread_days` reads "transcript days"). */
export function countsText(counts: Record<string, number>): string {
  const keys = Object.keys(counts).sort(
    (a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b),
  );
  if (keys.length === 0) return "nothing";
  return keys.map((k) => `${counts[k]} ${k === "thread_days" ? "transcript days" : k}`).join(" \u00b7 ");
}

/** What a restore of `bundle` replaces, in words, for the confirmation. */
export function replaceText(corpus: Corpus, current: Record<string, number>, bundle: BundleInfo): string {
  const what = corpus === "rag" ? "the documents corpus" : "the message graph";
  return `This replaces ${what} (now ${countsText(current)}) with ${bundle.name} (${countsText(bundle.counts)}). Nothing is merged: anything added since the export is gone until it is ingested or built again.`;
}

/** "model sentence-transformers/all-MiniLM-L6-v2 was 400, is 800 here": a bundle's drift. */
export function driftLines(bundle: BundleInfo): string[] {
  return bundle.drift.map((d) => `${d.setting} was ${d.bundle}, is ${d.current} here`);
}

const STATE_TEXT: Record<BackupRunInfo["state"], string> = {
  queued: "queued",
  running: "running",
  succeeded: "finished",
  failed: "failed",
  canceled: "canceled",
};

/** "Export running: chunks 1200 of 5000" / "Restore from x.zip finished". */
export function runLine(run: BackupRunInfo): string {
  const what = run.kind === "restore" ? `Restore from ${run.bundle ?? "a bundle"}` : "Export";
  let line = `${what} ${STATE_TEXT[run.state]}`;
  if (!run.done && run.phase) {
    line += run.total > 0 ? `: ${run.phase} ${run.processed} of ${run.total}` : `: ${run.phase}`;
  }
  if (run.done && run.kind === "export" && run.state === "succeeded" && run.bundle) {
    line += `: ${run.bundle} written and verified`;
  }
  return line;
}

/** The run to follow when the screen opens: the newest one still in flight. */
export function liveRun(runs: readonly BackupRunInfo[]): BackupRunInfo | null {
  return runs.find((r) => !r.done) ?? null;
}
