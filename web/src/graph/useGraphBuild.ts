/** Launch, follow (over SSE), and kill message-graph builds. */
import { useCallback, useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { followJob } from "../api/jobs";
import { getGraphBuild, graphBuildEvents, killGraphBuild, launchGraphBuilds } from "../api/resources";
import type { GraphBuild } from "../api/types";
import { parseBuildEvent } from "./builds";

export interface GraphBuildController {
  /** The followed build's latest state (its final one once done). */
  build: GraphBuild | null;
  /** Its event stream is open. */
  following: boolean;
  /** A launch or kill was sent and not answered yet. */
  busy: boolean;
  error: string | null;
  /** What the last launch did ("Already building chat.db"). */
  notice: string | null;
  follow: (build: GraphBuild) => void;
  /** Build (or resume) `paths`, or every supported archive; follows the first one launched. */
  launch: (paths?: string[]) => void;
  kill: (runId: string) => void;
}

/** `onFinished` runs when a followed build ends (read the status and lists again). */
export function useGraphBuild(onFinished: (build: GraphBuild) => void): GraphBuildController {
  const [build, setBuild] = useState<GraphBuild | null>(null);
  const [following, setFollowing] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const inFlight = useRef<AbortController | null>(null);
  const finished = useRef(onFinished);
  useEffect(() => {
    finished.current = onFinished;
  }, [onFinished]);
  useEffect(() => () => inFlight.current?.abort(), []);

  const follow = useCallback((start: GraphBuild) => {
    inFlight.current?.abort();
    setBuild(start);
    setError(null);
    if (start.done) return;
    const abort = new AbortController();
    inFlight.current = abort;
    setFollowing(true);
    const runId = start.run_id;
    const source = {
      events: (s: AbortSignal) => graphBuildEvents(runId, s),
      parse: parseBuildEvent,
      read: (s: AbortSignal) => getGraphBuild(runId, s),
      done: (b: GraphBuild) => b.done,
    };
    followJob(source, abort.signal, setBuild)
      .then(
        (final) => finished.current(final),
        (exc: unknown) => {
          if (!abort.signal.aborted) setError(`Lost the build's progress: ${describeError(exc)}`);
        },
      )
      .finally(() => {
        if (inFlight.current === abort) {
          inFlight.current = null;
          setFollowing(false);
        }
      });
  }, []);

  const launch = useCallback(
    (paths?: string[]) => {
      setBusy(true);
      setError(null);
      setNotice(null);
      launchGraphBuilds(paths)
        .then(
          (answer) => {
            const first = answer.launched[0] ?? answer.in_flight[0];
            if (answer.launched.length === 0 && answer.in_flight.length > 0) {
              setNotice(
                `Already building: ${answer.in_flight.map((b) => b.path ?? b.run_id).join(", ")}. Following it.`,
              );
            } else if (answer.launched.length > 1) {
              setNotice(`Launched ${answer.launched.length} builds, one per archive; following the first.`);
            }
            if (first) follow(first);
          },
          (exc: unknown) => setError(`The build was not launched: ${describeError(exc)}`),
        )
        .finally(() => setBusy(false));
    },
    [follow],
  );

  const kill = useCallback((runId: string) => {
    setBusy(true);
    setError(null);
    killGraphBuild(runId)
      .then(
        (killed) => setBuild((now) => (now?.run_id === killed.run_id && !now.done ? killed : now)),
        (exc: unknown) => setError(`The build was not killed: ${describeError(exc)}`),
      )
      .finally(() => setBusy(false));
  }, []);

  return { build, following, busy, error, notice, follow, launch, kill };
}
