/** Answer evaluations (Dagster runs of `evaluate_answers`): where they are launched, followed and killed, how they read. */
import { sendJson } from "../api/client";
import type { components } from "../api/generated";
import { jobKind } from "../api/jobs";

export type EvaluationRun = components["schemas"]["EvaluationRun"];

/** An evaluation: `/api/evaluations/{run_id}`, its `/events` and `/kill`. */
export const evaluations = jobKind<EvaluationRun>({
  base: "/api/evaluations",
  id: (run) => run.run_id,
  valid: (data) => typeof data.run_id === "string" && typeof data.questions_done === "number",
  needs: "run_id and questions_done",
  done: (run) => run.done,
  killable: true,
});

/** Launch an evaluation of the shipped golden suite; 409 corpus_busy during a restore. */
export function launchEvaluation(): Promise<EvaluationRun> {
  return sendJson<EvaluationRun>("POST", "/api/evaluations", {});
}

const STATE_TEXT: Record<EvaluationRun["state"], string> = {
  queued: "queued",
  running: "running",
  succeeded: "finished",
  failed: "failed",
  canceled: "killed",
};

/** "Evaluation running: 3 of 40 questions answered". */
export function progressLine(run: EvaluationRun): string {
  const counted =
    run.questions_total > 0
      ? `: ${run.questions_done} of ${run.questions_total} questions answered`
      : run.done
        ? ""
        : ": starting";
  return `Evaluation ${STATE_TEXT[run.state]}${counted}`;
}

/** The figures as label and value, once the suite is scored. */
export function figureRows(run: EvaluationRun): [string, string][] {
  const f = run.figures;
  if (!f) return [];
  const share = (x: number) => `${(x * 100).toFixed(1)} %`;
  return [
    ["Questions", String(f.n)],
    ["Key facts stated", share(f.answer_correctness)],
    ["Fully correct", share(f.fully_correct)],
    ["Citations valid", share(f.citation_validity)],
    ["Abstention right", share(f.abstention_accuracy)],
    ["Loops", String(f.loops)],
    ["First token (p50)", `${(f.first_token_p50_ms / 1000).toFixed(1)} s`],
  ];
}
