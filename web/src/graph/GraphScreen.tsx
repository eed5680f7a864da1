/**
 * The message graph screen: its size and state (a stale banner with its rebuild when
 * the chat model or the extraction settings changed), the archives it is built from,
 * its builds (launched, followed live, killed, resumed; rebuilds of days, a reset) and
 * the interactive entity graph with drill-down to the days each entity comes from.
 */
import { useCallback, useEffect, useState } from "react";

import { describeError } from "../api/client";
import { listGraphBuilds, listGraphSources } from "../api/resources";
import type { GraphBuildList, GraphSourceList, GraphStatus, GraphUploadResponse } from "../api/types";
import type { GraphAvailability } from "./availability";
import { liveBuild, shouldSwitch } from "./builds";
import { useGraphBuild } from "./useGraphBuild";
import { useBackups } from "../backups/useBackups";
import { BackupPanel } from "../backups/BackupPanel";
import { GraphBuilds } from "./GraphBuilds";
import { GraphExplorer } from "./GraphExplorer";
import { GraphStaleBanner } from "./GraphMaintenance";
import { GraphSources } from "./GraphSources";

/** How often the builds are re-read while one is under way or expected. */
const BUILDS_POLL_MS = 3000;
/** How long a build is expected after an upload that launched none. */
const EXPECT_MS = 90_000;

function statusLine(status: GraphStatus): string {
  const d = status.day_statuses;
  const parts = [
    `${status.entities} entities`,
    `${status.relations} relations`,
    `${status.days} day${status.days === 1 ? "" : "s"} (${status.messages} messages)`,
  ];
  const days = [
    d.processed && `${d.processed} processed`,
    d.processing && `${d.processing} processing`,
    d.pending && `${d.pending} pending`,
    d.failed && `${d.failed} failed`,
  ].filter(Boolean);
  if (days.length > 0) parts.push(`days ${days.join(", ")}`);
  return parts.join(" \u00b7 ");
}

interface GraphScreenProps {
  graph: GraphAvailability;
  /** Read the graph's status again. */
  onChanged: () => void;
  entity: string | null;
  day: string | null;
  /** An archive to show in the list (`#/graph?archive=`). */
  archive?: string | null;
  onNavigate: (entity: string | null, day: string | null) => void;
}

export function GraphScreen({ graph, onChanged, entity, day, archive = null, onNavigate }: GraphScreenProps) {
  const [sources, setSources] = useState<GraphSourceList | null>(null);
  const [sourcesError, setSourcesError] = useState<string | null>(null);
  const [builds, setBuilds] = useState<GraphBuildList | null>(null);
  const [buildsError, setBuildsError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [graphVersion, setGraphVersion] = useState(0);
  const enabled = graph.state !== "disabled";

  const refresh = useCallback(() => {
    setVersion((v) => v + 1);
    onChanged();
  }, [onChanged]);
  const controller = useGraphBuild(
    useCallback(() => {
      refresh();
      setGraphVersion((v) => v + 1);
    }, [refresh]),
  );
  const { follow, build: followed } = controller;
  const backups = useBackups(
    "graph",
    useCallback(() => {
      refresh();
      setGraphVersion((v) => v + 1);
    }, [refresh]),
    enabled,
  );

  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    listGraphSources(abort.signal).then(
      (list) => {
        setSources(list);
        setSourcesError(null);
      },
      (exc: unknown) => {
        if (!abort.signal.aborted) setSourcesError(`Cannot list the archives: ${describeError(exc)}`);
      },
    );
    listGraphBuilds(abort.signal).then(
      (list) => {
        setBuilds(list);
        setBuildsError(null);
        // a build already under way (the sensor's, another tab's) is followed at once,
        // and a running one rather than one waiting behind it
        const live = liveBuild(list.builds);
        if (live && shouldSwitch(followed, live)) follow(live);
      },
      (exc: unknown) => {
        if (!abort.signal.aborted) setBuildsError(`Cannot list the builds: ${describeError(exc)}`);
      },
    );
    return () => abort.abort();
    // re-read on demand only; `followed` is read as of that moment
  }, [enabled, version]);

  // builds are re-read while one is under way or one is expected (the sensor starts the
  // build of an upload Dagster could not be asked for): a build started elsewhere shows
  const [expectUntil, setExpectUntil] = useState(0);
  const anyLive = (builds?.builds ?? []).some((b) => !b.done);
  useEffect(() => {
    if (!enabled || (!anyLive && Date.now() > expectUntil)) return;
    const timer = window.setTimeout(() => setVersion((v) => v + 1), BUILDS_POLL_MS);
    return () => window.clearTimeout(timer);
  }, [enabled, anyLive, expectUntil, builds]);

  const uploaded = (answer: GraphUploadResponse | null) => {
    refresh();
    const launched = answer?.builds[0];
    if (launched) follow(launched);
    else if (answer?.results.some((r) => r.status !== "refused")) setExpectUntil(Date.now() + EXPECT_MS);
  };

  const status = graph.state === "enabled" ? graph.status : null;
  const canBuild = (sources?.sources ?? []).some((s) => s.supported);

  return (
    <div className="corpus-screen graph-screen">
      <div className="corpus-head">
        <h2 id="graph-heading">Message graph</h2>
        <p className="muted corpus-counts" aria-live="polite">
          {graph.state === "loading" && "Reading the graph\u2026"}
          {status && statusLine(status)}
          {graph.state === "unknown" && ""}
        </p>
        <button
          type="button"
          onClick={() => {
            refresh();
            setGraphVersion((v) => v + 1);
          }}
          disabled={!enabled}
        >
          Refresh
        </button>
      </div>
      {graph.state === "disabled" && (
        <div className="notice notice-warn" role="status">
          <p>
            <strong>The message graph is switched off.</strong> {graph.message}
          </p>
        </div>
      )}
      {graph.state === "unknown" && (
        <p className="error" role="alert">
          Cannot read the graph&apos;s status: {graph.message}
        </p>
      )}
      {status && (
        <p className="hint engine-line">
          Engine {status.engine.name} ({status.engine.package} {status.engine.version}) {"\u00b7"}{" "}
          {status.sources} archive{status.sources === 1 ? "" : "s"}
          {status.refreshed_at && ` \u00b7 last built ${new Date(status.refreshed_at).toLocaleString()}`}
        </p>
      )}
      {status && <GraphStaleBanner stale={status.stale} controller={controller} canBuild={canBuild} />}
      {enabled && (
        <>
          <GraphSources list={sources} error={sourcesError} onChanged={uploaded} focusPath={archive} />
          <GraphBuilds
            list={builds}
            error={buildsError}
            controller={controller}
            canBuild={canBuild}
            status={status}
          />
          <BackupPanel backups={backups} />
          <GraphExplorer
            entity={entity}
            day={day}
            version={graphVersion}
            onEntity={(name) => onNavigate(name, day)}
            onDay={(docKey) => onNavigate(entity, docKey)}
            onForgotten={() => {
              refresh();
              setGraphVersion((v) => v + 1);
            }}
          />
        </>
      )}
    </div>
  );
}
