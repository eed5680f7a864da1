/**
 * The state machine behind `useJob`, without React: one job of a kind followed at a
 * time (its latest state, whether its stream is open, why it failed), launches and
 * kills sent and answered, and everything stopped when the view goes away.
 */
import { describeError } from "../api/client";
import { followJob, jobSource, type JobKind } from "../api/jobs";

/** Where the followed job stands, as a view renders it. */
export interface JobState<T> {
  /** The followed job's latest state (its final one once done); `null` before the first. */
  job: T | null;
  /** Its event stream is open (or being read on after an early close). */
  following: boolean;
  /** A launch or a kill was sent and not answered yet. */
  pending: boolean;
  /** Why following, a launch or a kill failed, or what the feature reported (`setError`). */
  error: string | null;
}

export interface JobOptions<T> {
  /** Runs once a followed job is done (succeeded or not): read again what it changed. */
  onFinished?: (job: T) => void;
  /** The words before the error that ended following ("Lost the build's progress"); none: the error alone. */
  lost?: string;
  /** The words before a refused kill ("The build was not killed"); none: the error alone. */
  notKilled?: string;
  /** Following another job leaves the error shown (by default it clears it). */
  keepError?: boolean;
}

/** What to follow: a state (shown at once; a done one is only shown) or a job id. */
export type JobStart<T> = T | string;

function said(words: string | undefined, exc: unknown): string {
  return words ? `${words}: ${describeError(exc)}` : describeError(exc);
}

export class JobFollower<T> {
  /** Read again at every event, so that a hook can keep it current. */
  options: JobOptions<T>;
  private state: JobState<T> = { job: null, following: false, pending: false, error: null };
  private readonly listeners = new Set<() => void>();
  private inFlight: AbortController | null = null;
  /** Launches and kills not answered yet. */
  private sent = 0;
  /** Moved on by `clear` and `close`: a launch sent before is not followed. */
  private epoch = 0;
  private closed = false;

  constructor(
    readonly kind: JobKind<T>,
    options: JobOptions<T> = {},
  ) {
    this.options = options;
  }

  // --- the store (`useSyncExternalStore`) ---

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** The current state: the same object until something changes. */
  snapshot = (): JobState<T> => this.state;

  private update(patch: Partial<JobState<T>>): void {
    this.state = { ...this.state, ...patch };
    for (const listener of this.listeners) listener();
  }

  // --- what a view does ---

  /** Stop following the job followed now and follow `start` until it is done. */
  follow = (start: JobStart<T>): void => {
    if (this.closed) return;
    this.inFlight?.abort();
    this.inFlight = null;
    const first = typeof start === "string" ? null : start;
    const shown: Partial<JobState<T>> = this.options.keepError ? { job: first } : { job: first, error: null };
    if (first !== null && this.kind.done(first)) {
      this.update({ ...shown, following: false });
      return;
    }
    const abort = new AbortController();
    this.inFlight = abort;
    this.update({ ...shown, following: true });
    const id = first === null ? (start as string) : this.kind.id(first);
    followJob(jobSource(this.kind, id), abort.signal, (job) => {
      if (!abort.signal.aborted) this.update({ job });
    })
      .then(
        (final) => {
          if (!abort.signal.aborted) this.options.onFinished?.(final);
        },
        (exc: unknown) => {
          if (!abort.signal.aborted) this.update({ error: said(this.options.lost, exc) });
        },
      )
      .finally(() => {
        if (this.inFlight !== abort) return;
        this.inFlight = null;
        this.update({ following: false });
      });
  };

  /**
   * Send a launch and follow what `pick` takes from its answer (nothing: follow
   * nothing new); a refusal is the error, after `failed` ("The build was not launched").
   * An answer that comes after `clear` or `close` is dropped.
   */
  launch = <R>(
    send: () => Promise<R>,
    pick: (answer: R) => JobStart<T> | null | undefined,
    failed?: string,
  ): void => {
    if (this.closed) return;
    const epoch = this.epoch;
    this.sending(+1, { error: null });
    send()
      .then(
        (answer) => {
          if (this.epoch !== epoch) return;
          const next = pick(answer);
          if (next !== null && next !== undefined) this.follow(next);
        },
        (exc: unknown) => {
          if (this.epoch === epoch) this.update({ error: said(failed, exc) });
        },
      )
      .finally(() => this.sending(-1));
  };

  /**
   * Kill a job (the followed one when `id` is omitted); the followed job shows the state
   * the kill answers until its stream says more. Nothing happens for a kind that cannot
   * be killed.
   */
  kill = (id?: string): void => {
    const kill = this.kind.kill;
    const target = id ?? (this.state.job === null ? null : this.kind.id(this.state.job));
    if (kill === null || target === null || this.closed) return;
    this.sending(+1, { error: null });
    kill(target)
      .then(
        (killed) => {
          const now = this.state.job;
          if (now !== null && this.kind.id(now) === this.kind.id(killed) && !this.kind.done(now)) {
            this.update({ job: killed });
          }
        },
        (exc: unknown) => this.update({ error: said(this.options.notKilled, exc) }),
      )
      .finally(() => this.sending(-1));
  };

  /** Report a failure of the feature's own (or `null`) where the job's errors show. */
  setError = (error: string | null): void => this.update({ error });

  /** Stop following, drop the launches not answered yet, forget the job and the error. */
  clear = (): void => {
    this.epoch++;
    this.inFlight?.abort();
    this.inFlight = null;
    this.update({ job: null, following: false, error: null });
  };

  /** The view is gone: stop following, and follow nothing a launch answers later. */
  close = (): void => {
    this.closed = true;
    this.epoch++;
    this.inFlight?.abort();
    this.inFlight = null;
    if (this.state.following) this.update({ following: false });
  };

  /** The view is back (React's StrictMode mounts twice): follow again on demand. */
  open = (): void => {
    this.closed = false;
  };

  private sending(change: 1 | -1, patch: Partial<JobState<T>> = {}): void {
    this.sent += change;
    this.update({ ...patch, pending: this.sent > 0 });
  }
}
