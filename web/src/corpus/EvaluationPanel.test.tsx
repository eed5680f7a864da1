import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { KillableJobController } from "../jobs/useJob";
import { EvaluationPanel } from "./EvaluationPanel";
import { type EvaluationRun, evaluations } from "./evaluation";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

function run(overrides: Partial<EvaluationRun> = {}): EvaluationRun {
  return {
    run_id: "7c2a0000-0000-4000-8000-000000000001",
    state: "running",
    status: "STARTED",
    done: false,
    source: "api",
    suite: null,
    questions_done: 3,
    questions_total: 40,
    question: "[3/40] s03: facts 2/2, citations 1/1 valid (first token 3.1s, answer 6.0s)",
    figures: null,
    error: null,
    created_at: "2026-12-04T10:00:00Z",
    started_at: "2026-12-04T10:00:01Z",
    ended_at: null,
    dagster_url: "http://127.0.0.1:3000/runs/7c2a",
    ...overrides,
  };
}

function controller(overrides: Partial<KillableJobController<EvaluationRun>> = {}) {
  return {
    job: null,
    following: false,
    pending: false,
    error: null,
    follow: () => undefined,
    launch: () => undefined,
    kill: () => undefined,
    clear: () => undefined,
    setError: () => undefined,
    ...overrides,
  } satisfies KillableJobController<EvaluationRun>;
}

describe("answer evaluation panel", () => {
  it("offers a launch and no kill when nothing runs", () => {
    const page = html(<EvaluationPanel evaluation={controller()} />);
    expect(page).toContain('<button type="button">Evaluate answers</button>');
    expect(page).not.toContain("Kill");
  });

  it("counts the questions of a running evaluation and offers Kill", () => {
    const page = html(<EvaluationPanel evaluation={controller({ job: run() })} />);
    expect(page).toContain("Evaluation running: 3 of 40 questions answered");
    expect(page).toContain('<button type="button" disabled="">Evaluate answers</button>');
    expect(page).toContain('<button type="button" class="danger">Kill</button>');
    expect(page).toContain('href="http://127.0.0.1:3000/runs/7c2a"');
  });

  it("shows the figures once done, and why a run failed", () => {
    const figures = {
      n: 40,
      answer_correctness: 0.9675,
      fully_correct: 0.935,
      citation_validity: 1,
      abstention_accuracy: 0.875,
      loops: 0,
      first_token_p50_ms: 3612.5,
    };
    const done = run({ state: "failed", status: "FAILURE", done: true, questions_done: 40, figures });
    done.error = "answer_eval_results_abstention_gate: 1 blocking asset check failed";
    const page = html(<EvaluationPanel evaluation={controller({ job: done })} />);
    expect(page).toContain('<p class="error" role="status" aria-live="polite">Evaluation failed: 40 of 40');
    expect(page).toContain("<dt>Key facts stated</dt><dd>96.8 %</dd>");
    expect(page).toContain("<dt>Abstention right</dt><dd>87.5 %</dd>");
    expect(page).toContain("<dt>First token (p50)</dt><dd>3.6 s</dd>");
    expect(page).toContain("abstention_gate: 1 blocking asset check failed");
    expect(page).not.toContain("Kill");
  });

  it("follows, reads and kills at /api/evaluations", () => {
    expect(evaluations.id(run())).toBe("7c2a0000-0000-4000-8000-000000000001");
    expect(evaluations.done(run({ done: true }))).toBe(true);
    expect(evaluations.kill).not.toBeNull();
    const parsed = evaluations.parse({ event: "progress", data: JSON.stringify(run()), id: null });
    expect(parsed).toEqual({ type: "progress", data: run() });
  });
});
