/** The stale banner with its re-ingest action, and the live progress of an ingest job. */
import type { IngestProgress, StaleFlag } from "../api/types";
import { filesLine, jobHeadline, outcome, stageName } from "./progress";
import type { IngestJobController } from "./useIngestJob";

function JobProgress({ job }: { job: IngestProgress }) {
  const { targeted, materialized } = job.files;
  return (
    <>
      <p>
        <strong>{jobHeadline(job)}</strong>: {filesLine(job)}.
      </p>
      <progress max={Math.max(targeted, 1)} value={materialized} aria-label="Files indexed" />
      {job.assets.length > 0 && (
        <ul className="stages" aria-label="Stages">
          {job.assets.map((stage) => (
            <li key={stage.asset}>
              {stageName(stage.asset)}{" "}
              <span className="stage-count">
                {stage.materialized}/{stage.targeted}
                {stage.failed > 0 ? `, ${stage.failed} failed` : ""}
              </span>
            </li>
          ))}
        </ul>
      )}
      {job.error && <p className="field-error">{job.error}</p>}
      {job.failures.length > 0 && (
        <ul className="failures" aria-label="Failed files">
          {job.failures.map((f) => (
            <li key={`${f.run_id}:${f.relative_path}`}>
              <code>{f.relative_path}</code>
              {f.error ? `: ${f.error}` : ""}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

interface CorpusStatusProps {
  stale: StaleFlag | null;
  ingest: IngestJobController;
}

/** Nothing when the corpus is current and no job was launched from this page. */
export function CorpusStatus({ stale, ingest }: CorpusStatusProps) {
  const { launched, job, busy, error } = ingest;
  const hasJob = busy || job !== null || error !== null;
  if (stale === null && !hasJob) return null;
  const dagsterUrl = job?.dagster_url ?? launched?.dagster_url ?? null;
  const state = job ? outcome(job) : busy ? "running" : "failed";
  return (
    <div className="corpus-status">
      {stale !== null && (
        <section className="stale-banner" aria-labelledby="stale-heading">
          <p>
            <strong id="stale-heading">The corpus is out of date with the current settings.</strong>{" "}
            <span className="stale-reason">
              {stale.reason.charAt(0).toUpperCase() + stale.reason.slice(1)} (since{" "}
              {new Date(stale.since).toLocaleString()}).
            </span>
          </p>
          <button type="button" className="primary" disabled={busy} onClick={() => ingest.start(true)}>
            {busy ? "Re-ingesting\u2026" : "Re-ingest now"}
          </button>
        </section>
      )}
      {hasJob && (
        <section className={`ingest-job ingest-${state}`} aria-labelledby="ingest-heading" aria-live="polite">
          <h2 id="ingest-heading" className="visually-hidden">
            Ingest job
          </h2>
          {job !== null ? (
            <JobProgress job={job} />
          ) : busy ? (
            <p>
              <strong>
                {launched ? `Started ${launched.kind} of ${launched.paths.length} files` : "Launching"}
              </strong>
              {"\u2026"}
            </p>
          ) : null}
          {error !== null && (
            <p className="field-error" role="alert">
              The ingest job failed to run: {error}
            </p>
          )}
          <p className="job-links">
            {dagsterUrl && (
              <a href={dagsterUrl} target="_blank" rel="noreferrer">
                Open the job in Dagster<span className="visually-hidden"> (opens in a new tab)</span>
              </a>
            )}
            {!busy && (
              <button type="button" className="link-button" onClick={ingest.dismiss}>
                Dismiss
              </button>
            )}
          </p>
        </section>
      )}
    </div>
  );
}
