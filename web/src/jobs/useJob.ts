/**
 * Follow long-running jobs of one kind (an ingest job, a graph build, a backup run, …)
 * over their event streams: given the kind's descriptor (`jobKind` in `api/jobs.ts`),
 * the job's latest state, its errors, launching, killing, and an abort when another job
 * is followed or the view goes away. The machinery is `JobFollower`; this binds it to
 * React.
 */
import { useEffect, useMemo, useSyncExternalStore } from "react";

import type { JobKind, KillableJobKind } from "../api/jobs";
import { JobFollower, type JobOptions, type JobStart, type JobState } from "./follower";

export type { JobOptions, JobStart, JobState } from "./follower";

export interface JobController<T> extends JobState<T> {
  /** Stop following the job followed now and follow `start` (a state or an id) until it is done. */
  follow: (start: JobStart<T>) => void;
  /**
   * Send a launch, then follow what `pick` takes from its answer; a refusal shows as the
   * error, after `failed` ("The build was not launched").
   */
  launch: <R>(
    send: () => Promise<R>,
    pick: (answer: R) => JobStart<T> | null | undefined,
    failed?: string,
  ) => void;
  /** Kill a job (the followed one when `id` is omitted); `null` when the kind cannot be killed. */
  kill: ((id?: string) => void) | null;
  /** Stop following; forget the job, its error, and any launch not answered yet. */
  clear: () => void;
  /** Show a failure of the feature's own where the job's errors show. */
  setError: (error: string | null) => void;
}

export type KillableJobController<T> = JobController<T> & { kill: (id?: string) => void };

/**
 * `kind` should keep its identity (a module constant): another kind starts afresh.
 * `options` are read as they are at the latest render.
 */
export function useJob<T>(kind: KillableJobKind<T>, options?: JobOptions<T>): KillableJobController<T>;
export function useJob<T>(kind: JobKind<T>, options?: JobOptions<T>): JobController<T>;
export function useJob<T>(kind: JobKind<T>, options: JobOptions<T> = {}): JobController<T> {
  // one follower per kind; its options are kept current by the effect below
  const follower = useMemo(() => new JobFollower(kind, options), [kind]);
  useEffect(() => {
    follower.options = options;
  });
  useEffect(() => {
    follower.open();
    return follower.close;
  }, [follower]);
  const state = useSyncExternalStore(follower.subscribe, follower.snapshot, follower.snapshot);
  return useMemo(
    () => ({
      ...state,
      follow: follower.follow,
      launch: follower.launch,
      kill: kind.kill === null ? null : follower.kill,
      clear: follower.clear,
      setError: follower.setError,
    }),
    [state, follower, kind],
  );
}
