/** A corpus's bundles, and its export and restore runs launched and followed over SSE. */
import { useCallback, useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { followJob } from "../api/jobs";
import {
  backupRunEvents,
  exportBackup,
  getBackupRun,
  listBackupRuns,
  listBackups,
  restoreBackup,
} from "../api/resources";
import type { BackupList, BackupRunInfo, Corpus } from "../api/types";
import { liveRun, parseBackupEvent } from "./bundles";

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
  const [run, setRun] = useState<BackupRunInfo | null>(null);
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inFlight = useRef<AbortController | null>(null);
  const restored = useRef(onRestored);
  useEffect(() => {
    restored.current = onRestored;
  }, [onRestored]);
  useEffect(() => () => inFlight.current?.abort(), []);

  const refresh = useCallback(() => {
    listBackups(corpus).then(setList, (exc: unknown) =>
      setError(`The backups could not be listed: ${describeError(exc)}`),
    );
  }, [corpus]);

  const follow = useCallback(
    (start: BackupRunInfo) => {
      inFlight.current?.abort();
      setRun(start);
      if (start.done) return;
      const abort = new AbortController();
      inFlight.current = abort;
      const runId = start.run_id;
      const source = {
        events: (s: AbortSignal) => backupRunEvents(corpus, runId, s),
        parse: parseBackupEvent,
        read: (s: AbortSignal) => getBackupRun(corpus, runId, s),
        done: (r: BackupRunInfo) => r.done,
      };
      followJob(source, abort.signal, setRun)
        .then(
          (final) => {
            if (final.state === "failed") setError(final.error ?? "The run failed; see its Dagster page.");
            if (final.kind === "restore" && final.state === "succeeded") restored.current();
            refresh();
          },
          (exc: unknown) => {
            if (!abort.signal.aborted) setError(`Lost the run's progress: ${describeError(exc)}`);
          },
        )
        .finally(() => {
          if (inFlight.current === abort) inFlight.current = null;
        });
    },
    [corpus, refresh],
  );

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
    (send: () => Promise<BackupRunInfo>, what: string) => {
      setSending(true);
      setError(null);
      send()
        .then(follow, (exc: unknown) => setError(`The ${what} was not started: ${describeError(exc)}`))
        .finally(() => setSending(false));
    },
    [follow],
  );

  const exportNow = useCallback(() => launch(() => exportBackup(corpus), "export"), [corpus, launch]);
  const restore = useCallback(
    (name: string) => launch(() => restoreBackup(corpus, name), "restore"),
    [corpus, launch],
  );

  const busy = sending || (run !== null && !run.done);
  return { corpus, list, run, busy, error, refresh, exportNow, restore };
}
