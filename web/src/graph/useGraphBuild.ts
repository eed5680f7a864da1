/** Launch, follow (over SSE), and kill message-graph builds, rebuilds and resets. */
import { useCallback, useState } from "react";

import { launchGraphBuilds, launchGraphRebuild, resetGraph, type DayRange } from "../api/resources";
import type { GraphBuild } from "../api/types";
import { useJob } from "../jobs/useJob";
import { graphBuilds } from "./builds";

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
  /** Extract the days of `range` again (every day when it names none), and follow the run. */
  rebuild: (range?: DayRange) => void;
  /** Empty the graph (its archives kept), and follow the run. */
  reset: () => void;
  kill: (runId: string) => void;
}

/** `onFinished` runs when a followed build ends (read the status and lists again). */
export function useGraphBuild(onFinished: (build: GraphBuild) => void): GraphBuildController {
  const [notice, setNotice] = useState<string | null>(null);
  const builds = useJob(graphBuilds, {
    onFinished,
    lost: "Lost the build's progress",
    notKilled: "The build was not killed",
  });
  const { launch: send } = builds;

  const launch = useCallback(
    (paths?: string[]) => {
      setNotice(null);
      send(
        () => launchGraphBuilds(paths),
        (answer) => {
          if (answer.launched.length === 0 && answer.in_flight.length > 0) {
            setNotice(
              `Already building: ${answer.in_flight.map((b) => b.path ?? b.run_id).join(", ")}. Following it.`,
            );
          } else if (answer.launched.length > 1) {
            setNotice(`Launched ${answer.launched.length} builds, one per archive; following the first.`);
          }
          return answer.launched[0] ?? answer.in_flight[0];
        },
        "The build was not launched",
      );
    },
    [send],
  );

  const rebuild = useCallback(
    (range?: DayRange) => {
      setNotice(null);
      send(
        () => launchGraphRebuild(range),
        (answer) => {
          if (answer.launched.length === 0 && answer.in_flight.length > 0) {
            setNotice("That rebuild is already under way. Following it.");
          }
          return answer.launched[0] ?? answer.in_flight[0];
        },
        "The rebuild was not launched",
      );
    },
    [send],
  );

  const reset = useCallback(() => {
    setNotice(null);
    send(
      () => resetGraph(),
      (run) => run,
      "The graph was not reset",
    );
  }, [send]);

  const { job: build, following, pending: busy, error, follow, kill } = builds;
  return { build, following, busy, error, notice, follow, launch, rebuild, reset, kill };
}
