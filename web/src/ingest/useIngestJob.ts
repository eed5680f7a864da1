/** Launch an ingest job and follow its progress stream until it is done. */
import { useCallback, useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { followJob } from "../api/jobs";
import { getIngestJob, ingestEvents, launchIngest } from "../api/resources";
import type { IngestLaunched, IngestProgress } from "../api/types";
import { parseIngestEvent } from "./progress";

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

function follow(
  jobId: string,
  signal: AbortSignal,
  onProgress: (job: IngestProgress) => void,
): Promise<IngestProgress> {
  const source = {
    events: (s: AbortSignal) => ingestEvents(jobId, s),
    parse: parseIngestEvent,
    read: (s: AbortSignal) => getIngestJob(jobId, s),
    done: (job: IngestProgress) => job.done,
  };
  return followJob(source, signal, onProgress);
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
