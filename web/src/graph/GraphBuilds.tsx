/**
 * The graph's runs: the followed one's live progress with Kill, the recent ones with
 * Resume; Build, Reset and a rebuild of a range of days.
 */
import type { GraphBuild, GraphBuildList, GraphStatus } from "../api/types";
import { buildHeadline, progressLine, rebuildDays, resumable } from "./builds";
import { GraphResetButton, RebuildDaysForm } from "./GraphMaintenance";
import type { GraphBuildController } from "./useGraphBuild";

function BuildProgress({ build, controller }: { build: GraphBuild; controller: GraphBuildController }) {
  const p = build.progress;
  return (
    <div className={`graph-build build-${build.state}`} data-run-id={build.run_id} aria-live="polite">
      <p>
        <strong>{buildHeadline(build)}</strong>: {progressLine(build)}.
      </p>
      {!build.done &&
        (p ? (
          <progress max={Math.max(p.total, 1)} value={p.processed} aria-label="Days processed" />
        ) : (
          <progress aria-label="Days processed" />
        ))}
      {build.message && <p className="muted build-message">{build.message}</p>}
      {build.error && <p className="field-error">{build.error}</p>}
      <p className="job-links">
        <a href={build.dagster_url} target="_blank" rel="noreferrer">
          Open the run in Dagster<span className="visually-hidden"> (opens in a new tab)</span>
        </a>
        {!build.done && (
          <button
            type="button"
            className="danger"
            disabled={controller.busy}
            onClick={() => controller.kill(build.run_id)}
          >
            Kill
          </button>
        )}
        {resumable(build) && build.path && (
          <button type="button" disabled={controller.busy} onClick={() => controller.launch([build.path!])}>
            Resume
          </button>
        )}
      </p>
    </div>
  );
}

interface GraphBuildsProps {
  list: GraphBuildList | null;
  error: string | null;
  controller: GraphBuildController;
  /** There is a supported archive to build. */
  canBuild: boolean;
  /** The graph's status, for what a reset drops. */
  status?: GraphStatus | null;
}

function what(build: GraphBuild) {
  switch (build.kind) {
    case "remove":
      return "removal";
    case "reset":
      return "reset";
    case "rebuild":
      return `rebuild of ${rebuildDays(build)}`;
    default:
      return <code>{build.path}</code>;
  }
}

export function GraphBuilds({ list, error, controller, canBuild, status = null }: GraphBuildsProps) {
  const followed = controller.build;
  const builds = list?.builds ?? [];
  return (
    <section className="documents graph-builds" aria-labelledby="graph-builds-heading">
      <div className="section-head">
        <h3 id="graph-builds-heading">Builds</h3>
        <span className="section-actions">
          <button
            type="button"
            className="primary"
            disabled={controller.busy || !canBuild || (followed !== null && !followed.done)}
            onClick={() => controller.launch()}
          >
            Build the graph
          </button>
          <GraphResetButton status={status} controller={controller} />
        </span>
      </div>
      <p className="hint">
        A build extracts people, places and events from each new or changed conversation day with the chat
        model. A killed or failed build resumes where it stopped when launched again. A rebuild extracts the
        days of a range again from every archive (after the chat model or the extraction settings changed),
        leaving the other days as they are; Reset empties the graph and keeps the archives.
      </p>
      <RebuildDaysForm controller={controller} canBuild={canBuild} />
      {controller.notice && <p className="notice">{controller.notice}</p>}
      {controller.error && (
        <p className="error" role="alert">
          {controller.error}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {followed && <BuildProgress build={followed} controller={controller} />}
      {builds.length > 0 && (
        <div className="table-scroll">
          <table className="graph-build-table">
            <caption className="visually-hidden">Recent builds, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">What</th>
                <th scope="col">State</th>
                <th scope="col">Days</th>
                <th scope="col">Started</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {builds.map((b) => (
                <tr key={b.run_id} data-run-id={b.run_id} data-state={b.state}>
                  <td>
                    <a href={b.dagster_url} target="_blank" rel="noreferrer">
                      <code>{b.run_id.slice(0, 8)}</code>
                    </a>
                  </td>
                  <td>
                    {what(b)}
                    {b.source && <span className="muted"> ({b.source})</span>}
                  </td>
                  <td>
                    <span className={`pill-status build-state-${b.state}`}>{b.state}</span>
                    {b.error && <span className="failure-reason"> {b.error}</span>}
                  </td>
                  <td>{progressLine(b)}</td>
                  <td className="date">{new Date(b.started_at ?? b.created_at).toLocaleString()}</td>
                  <td>
                    {!b.done && b.run_id !== followed?.run_id && (
                      <button type="button" className="link-button" onClick={() => controller.follow(b)}>
                        Follow
                      </button>
                    )}
                    {resumable(b) && b.path && (
                      <button
                        type="button"
                        className="link-button"
                        disabled={controller.busy}
                        onClick={() => controller.launch([b.path!])}
                      >
                        Resume
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list !== null && builds.length === 0 && <p className="muted">No build has run yet.</p>}
    </section>
  );
}
