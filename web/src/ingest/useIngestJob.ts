/** Launch an ingest job and follow its progress stream until it is done. */
import { useCallback, useEffect, useRef, useState } from "react";

import { ApiError, describeError } from "../api/client";
import { getIngestJob, ingestEvents, launchIngest } from "../api/resources";
import type { IngestLaunched, IngestProgress } from "../api/types";
import { parseIngestEvent } from "./progress";

/** Reconnections tried when the progress stream ends before the job does. */
const RECONNECTS = 3;

export interface IngestJobController {
  /** The launched job, before its first progress arrives. */
  launched: IngestLaunched | null;
  /** The latest progress (the final state once `done`). */
  job: IngestProgress | null;
  busy: boolean;
  error: string | null;
  /** Launch `POST /api/ingest` over the whole corpus and follow it. */
  start: (reingest: boolean) => void;
  /** Forget a finished job (hides its summary). */
  dismiss: () => void;
}

async function follow(
  jobId: string,
  signal: AbortSignal,
  onProgress: (job: IngestProgress) => void,
): Promise<IngestProgress> {
  for (let attempt = 0; attempt <= RECONNECTS; attempt++) {
    for await (const message of ingestEvents(jobId, signal)) {
      const event = parseIngestEvent(message);
      if (event === null) continue;
      if (event.type === "error") throw new ApiError(200, event.data.code, event.data.message);
      onProgress(event.data);
      if (event.type === "done") return event.data;
    }
    // the stream closed before `done` (a proxy timeout, an API restart): read the job, go on
    const now = await getIngestJob(jobId, signal);
    onProgress(now);
    if (now.done) return now;
  }
  throw new ApiError(
    0,
    "stream_incomplete",
    "The progress stream kept closing before the job finished; follow it in the Dagster UI.",
  );
}

/** `onFinished` runs once the job is done (succeeded or not): reread what it changed. */
export function useIngestJob(onFinished: (job: IngestProgress) => void): IngestJobController {
  const [launched, setLaunched] = useState<IngestLaunched | null>(null);
  const [job, setJob] = useState<IngestProgress | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inFlight = useRef<AbortController | null>(null);
  const finished = useRef(onFinished);
  useEffect(() => {
    finished.current = onFinished;
  }, [onFinished]);
  useEffect(() => () => inFlight.current?.abort(), []);

  const start = useCallback((reingest: boolean) => {
    inFlight.current?.abort();
    const abort = new AbortController();
    inFlight.current = abort;
    setLaunched(null);
    setJob(null);
    setError(null);
    setBusy(true);
    void (async () => {
      try {
        const started = await launchIngest(reingest);
        if (abort.signal.aborted) return;
        setLaunched(started);
        const final = await follow(started.job_id, abort.signal, setJob);
        finished.current(final);
      } catch (exc) {
        if (!abort.signal.aborted) setError(describeError(exc));
      } finally {
        if (inFlight.current === abort) {
          inFlight.current = null;
          setBusy(false);
        }
      }
    })();
  }, []);

  const dismiss = useCallback(() => {
    if (inFlight.current !== null) return;
    setLaunched(null);
    setJob(null);
    setError(null);
  }, []);

  return { launched, job, busy, error, start, dismiss };
}
