/**
 * The answer evaluation: the shipped golden suite answered on the live index (a Dagster
 * run), its questions counted as they are answered, Kill, and the figures once scored.
 */
import type { KillableJobController } from "../jobs/useJob";
import { type EvaluationRun, figureRows, launchEvaluation, progressLine } from "./evaluation";

interface EvaluationPanelProps {
  evaluation: KillableJobController<EvaluationRun>;
}

export function EvaluationPanel({ evaluation }: EvaluationPanelProps) {
  const { job: run, pending, error } = evaluation;
  const live = run !== null && !run.done;
  const rows = run ? figureRows(run) : [];
  return (
    <section className="evaluation" aria-labelledby="evaluation-heading">
      <h3 id="evaluation-heading">Answer evaluation</h3>
      <div className="backup-bar">
        <button
          type="button"
          disabled={pending || live}
          onClick={() =>
            evaluation.launch(launchEvaluation, (started) => started, "The evaluation was not launched")
          }
        >
          Evaluate answers
        </button>
        {live && (
          <button
            type="button"
            className="danger"
            disabled={pending}
            onClick={() => evaluation.kill(run.run_id)}
          >
            Kill
          </button>
        )}
      </div>
      {run && (
        <p className={run.state === "failed" ? "error" : "notice"} role="status" aria-live="polite">
          {progressLine(run)}{" "}
          <a href={run.dagster_url} target="_blank" rel="noreferrer">
            Dagster run
          </a>
        </p>
      )}
      {run?.error && <p className="hint">{run.error}</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {rows.length > 0 && (
        <dl className="evaluation-figures">
          {rows.map(([label, value]) => (
            <div key={label}>
              <dt>{label}</dt>
              <dd>{value}</dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  );
}
