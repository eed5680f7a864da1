/** Launch an ingest job and follow its progress stream until it is done. */
import { useCallback, useState } from "react";

import { launchIngest } from "../api/resources";
import type { IngestLaunched, IngestProgress } from "../api/types";
import { useJob } from "../jobs/useJob";
import { ingestJobs } from "./progress";

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

/** `onFinished` runs once the job is done (succeeded or not): reread what it changed. */
export function useIngestJob(onFinished: (job: IngestProgress) => void): IngestJobController {
  const [launched, setLaunched] = useState<IngestLaunched | null>(null);
  const { job, following, pending, error, launch, clear } = useJob(ingestJobs, { onFinished });
  const busy = pending || following;

  const start = useCallback(
    (reingest: boolean) => {
      clear();
      setLaunched(null);
      launch(
        () => launchIngest(reingest),
        (started) => {
          setLaunched(started);
          return started.job_id;
        },
      );
    },
    [clear, launch],
  );

  const dismiss = useCallback(() => {
    if (busy) return;
    setLaunched(null);
    clear();
  }, [busy, clear]);

  return { launched, job, busy, error, start, dismiss };
}
