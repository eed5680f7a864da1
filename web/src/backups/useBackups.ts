/** A corpus's bundles, and its export and restore runs launched and followed over SSE. */
import { useCallback, useEffect, useState } from "react";

import { describeError } from "../api/client";
import { exportBackup, listBackupRuns, listBackups, restoreBackup } from "../api/resources";
import type { BackupList, BackupRunInfo, Corpus } from "../api/types";
import { useJob } from "../jobs/useJob";
import { backupRuns, liveRun } from "./bundles";

export interface BackupController {
  corpus: Corpus;
  /** The bundles and what the corpus holds now (`null` until first read). */
  list: BackupList | null;
  /** The followed run's latest state (its final one once done). */
  run: BackupRunInfo | null;
  /** An export or restore was sent and not answered yet, or a run is in flight. */
  busy: boolean;
  error: string | null;
  refresh: () => void;
  exportNow: () => void;
  restore: (name: string) => void;
}

/**
 * `onRestored` runs when a followed restore succeeds (read the corpus again); nothing is
 * read while `enabled` is false (the graph switched off).
 */
export function useBackups(corpus: Corpus, onRestored: () => void, enabled = true): BackupController {
  const [list, setList] = useState<BackupList | null>(null);
  const runs = useJob(backupRuns[corpus], {
    // a list that could not be read shares the error line: following a run keeps it
    keepError: true,
    lost: "Lost the run's progress",
    onFinished: (final) => {
      if (final.state === "failed") runs.setError(final.error ?? "The run failed; see its Dagster page.");
      if (final.kind === "restore" && final.state === "succeeded") onRestored();
      refresh();
    },
  });
  const { job: run, error, follow, launch: send, setError } = runs;

  const refresh = useCallback(() => {
    listBackups(corpus).then(setList, (exc: unknown) =>
      setError(`The backups could not be listed: ${describeError(exc)}`),
    );
  }, [corpus, setError]);

  useEffect(() => {
    if (!enabled) return;
    refresh();
    const abort = new AbortController();
    listBackupRuns(corpus, abort.signal).then(
      (runs) => {
        const live = liveRun(runs.runs);
        if (live) follow(live);
      },
      () => undefined, // Dagster unreachable: the list still shows, launching says why
    );
    return () => abort.abort();
  }, [corpus, enabled, refresh, follow]);

  const launch = useCallback(
    (launchRun: () => Promise<BackupRunInfo>, what: string) =>
      send(launchRun, (started) => started, `The ${what} was not started`),
    [send],
  );

  const exportNow = useCallback(() => launch(() => exportBackup(corpus), "export"), [corpus, launch]);
  const restore = useCallback(
    (name: string) => launch(() => restoreBackup(corpus, name), "restore"),
    [corpus, launch],
  );

  const busy = runs.pending || (run !== null && !run.done);
  return { corpus, list, run, busy, error, refresh, exportNow, restore };
}
