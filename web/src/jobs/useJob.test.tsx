import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { renderToStaticMarkup } from "react-dom/server";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { sendJson } from "../api/client";
import { jobKind, type JobKind } from "../api/jobs";
import { backupRuns } from "../backups/bundles";
import { graphBuilds } from "../graph/builds";
import { ingestJobs } from "../ingest/progress";
import { JobFollower, type JobOptions, type JobState } from "./follower";
import { useJob, type JobController } from "./useJob";

/** A kind the API does not have yet: an answer evaluation run, here only its descriptor. */
interface Evaluation {
  run_id: string;
  state: "queued" | "running" | "canceling" | "succeeded" | "failed" | "canceled";
  done: boolean;
  scored: number;
}

const run = (run_id: string, scored: number, overrides: Partial<Evaluation> = {}): Evaluation => ({
  run_id,
  state: "running",
  done: false,
  scored,
  ...overrides,
});
const finished = (run_id: string): Evaluation => run(run_id, 3, { state: "succeeded", done: true });

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

// A real HTTP server on loopback playing evaluation runs: their state, their event
// streams (whole, closing early, failing, or held open) and their kill.
let server: Server;
let base = "";
/** Every request, as "METHOD /path". */
let requests: string[] = [];
let streams = new Map<string, number>();
/** Resolves when the client closes the held stream of a run. */
const hangUps = new Map<string, () => void>();
const hungUp = (id: string) => new Promise<void>((resolve) => hangUps.set(id, resolve));

function route(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? "/", "http://x").pathname;
  requests.push(`${req.method} ${path}`);
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const stream = () => res.writeHead(200, { "content-type": "text/event-stream" });
  const match = /^\/api\/evaluations(?:\/([^/]+))?(?:\/(events|kill))?$/.exec(path);
  const [, id = "", part = ""] = match ?? [];
  if (req.method === "POST" && id === "") {
    // the launch: `{"refuse": true}` is refused, else the run `steady` is started
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if ((JSON.parse(body || "{}") as { refuse?: boolean }).refuse) {
        json(409, { code: "corpus_busy", message: "An export is writing the corpus." });
      } else json(202, run("steady", 0, { state: "queued" }));
    });
    return;
  }
  if (part === "kill") {
    if (id === "ended") json(409, { code: "run_ended", message: "The run has already ended." });
    else json(200, run(id, 1, { state: "canceling" }));
    return;
  }
  if (part === "") {
    json(200, run(id, 1));
    return;
  }
  const n = (streams.get(id) ?? 0) + 1;
  streams.set(id, n);
  stream();
  switch (id) {
    case "steady":
      res.end(
        sse("progress", run(id, 1)) + ": ping\n\n" + sse("progress", run(id, 2)) + sse("done", finished(id)),
      );
      return;
    case "drops": // the first stream closes before the run is done; the second ends it
      res.end(n === 1 ? sse("progress", run(id, 1)) : sse("done", finished(id)));
      return;
    case "fails":
      res.end(sse("error", { code: "dagster_unavailable", message: "Dagster stopped answering" }));
      return;
    default: // held open until the client goes
      res.write(sse("progress", run(id, 1)));
      req.on("close", () => hangUps.get(id)?.());
  }
}

beforeAll(async () => {
  server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

afterEach(() => {
  requests = [];
  streams = new Map();
  hangUps.clear();
});

/** The whole descriptor of the evaluation kind. */
function evaluations(killable = true): JobKind<Evaluation> {
  return jobKind<Evaluation>({
    base: `${base}/api/evaluations`,
    id: (r) => r.run_id,
    valid: (data) => typeof data.run_id === "string" && typeof data.state === "string",
    needs: "run_id and state",
    done: (r) => r.done,
    killable,
  });
}

/** A follower of evaluation runs and every state it showed, in order. */
function follower(options: JobOptions<Evaluation> = {}, kind = evaluations()) {
  const f = new JobFollower(kind, options);
  const seen: JobState<Evaluation>[] = [];
  f.subscribe(() => seen.push(f.snapshot()));
  return { f, seen, scored: () => seen.map((s) => s.job?.scored ?? null) };
}

/** The follower's state once `ok` holds of it. */
function until<T>(f: JobFollower<T>, ok: (state: JobState<T>) => boolean): Promise<JobState<T>> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!ok(f.snapshot())) return;
      clearTimeout(timer);
      stop();
      resolve(f.snapshot());
    };
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`still waiting, at ${JSON.stringify(f.snapshot())}`));
    }, 5000);
    const stop = f.subscribe(check);
    check();
  });
}

const idle = (s: JobState<unknown>) => !s.following && !s.pending;

describe("following a job (the machinery of useJob) against a real server", () => {
  it("shows every state in order, ends with the done one and says so once", async () => {
    const onFinished = vi.fn();
    const { f, scored } = follower({ onFinished });
    f.follow("steady");
    expect(f.snapshot()).toMatchObject({ job: null, following: true, error: null });
    const end = await until(f, idle);
    expect(end).toEqual({ job: finished("steady"), following: false, pending: false, error: null });
    expect(scored().filter((n, i, all) => n !== all[i - 1])).toEqual([null, 1, 2, 3]);
    expect(onFinished).toHaveBeenCalledTimes(1);
    expect(onFinished).toHaveBeenCalledWith(finished("steady"));
    expect(requests).toEqual(["GET /api/evaluations/steady/events"]);
  });

  it("shows a state it is given at once, and only shows one that is done", async () => {
    const { f } = follower();
    f.follow(run("steady", 0));
    expect(f.snapshot()).toMatchObject({ job: run("steady", 0), following: true });
    await until(f, idle);
    f.follow(finished("old"));
    expect(f.snapshot()).toEqual({ job: finished("old"), following: false, pending: false, error: null });
    expect(requests).toEqual(["GET /api/evaluations/steady/events"]);
  });

  it("reads the job on when its stream closes early, then follows it to its end", async () => {
    const { f, scored } = follower();
    f.follow("drops");
    const end = await until(f, idle);
    expect(end.job).toEqual(finished("drops"));
    expect(end.error).toBeNull();
    expect(scored().filter((n, i, all) => n !== all[i - 1])).toEqual([null, 1, 3]);
    expect(requests).toEqual([
      "GET /api/evaluations/drops/events",
      "GET /api/evaluations/drops",
      "GET /api/evaluations/drops/events",
    ]);
  });

  it("shows an in-band error after the kind's words, or alone; the job is not finished", async () => {
    const onFinished = vi.fn();
    const worded = follower({ onFinished, lost: "Lost the run's progress" }).f;
    worded.follow("fails");
    expect((await until(worded, idle)).error).toBe("Lost the run's progress: Dagster stopped answering");
    const plain = follower().f;
    plain.follow("fails");
    expect((await until(plain, idle)).error).toBe("Dagster stopped answering");
    expect(onFinished).not.toHaveBeenCalled();
  });

  it("aborts the job it follows when it follows another, and shows nothing more of it", async () => {
    const { f, seen } = follower();
    const gone = hungUp("held");
    f.follow("held");
    await until(f, (s) => s.job?.run_id === "held");
    f.follow("steady");
    await gone; // the server saw the held stream closed
    const end = await until(f, idle);
    expect(end.job).toEqual(finished("steady"));
    const after = seen.slice(seen.findIndex((s) => s.job?.run_id === "steady"));
    expect(after.every((s) => s.job === null || s.job.run_id === "steady")).toBe(true);
  });

  it("clears the error when it follows another job, unless told to keep it", async () => {
    const cleared = follower().f;
    cleared.setError("The list could not be read");
    cleared.follow(finished("old"));
    expect(cleared.snapshot().error).toBeNull();
    const kept = follower({ keepError: true }).f;
    kept.setError("The list could not be read");
    kept.follow(finished("old"));
    expect(kept.snapshot().error).toBe("The list could not be read");
  });

  it("stops when the view goes (close): the stream is aborted and a late launch not followed", async () => {
    const { f } = follower();
    const gone = hungUp("held");
    f.follow("held");
    await until(f, (s) => s.job !== null);
    let answer: (value: Evaluation) => void = () => {};
    f.launch(
      () => new Promise<Evaluation>((resolve) => (answer = resolve)),
      (started) => started,
    );
    f.close();
    await gone;
    expect(f.snapshot().following).toBe(false);
    answer(run("steady", 0));
    await until(f, (s) => !s.pending);
    expect(requests).toEqual(["GET /api/evaluations/held/events"]);
  });

  it("launches and follows what the answer names; a refusal shows after its words", async () => {
    const onFinished = vi.fn();
    const { f } = follower({ onFinished });
    const launch = (body: unknown) => () => sendJson<Evaluation>("POST", `${base}/api/evaluations`, body);
    f.launch(launch({}), (started) => started.run_id, "The evaluation was not started");
    expect(f.snapshot()).toMatchObject({ pending: true, error: null });
    const end = await until(f, idle);
    expect(end.job).toEqual(finished("steady"));
    expect(onFinished).toHaveBeenCalledWith(finished("steady"));
    expect(requests).toEqual(["POST /api/evaluations", "GET /api/evaluations/steady/events"]);

    f.launch(launch({ refuse: true }), (started) => started, "The evaluation was not started");
    expect((await until(f, idle)).error).toBe(
      "The evaluation was not started: An export is writing the corpus.",
    );
  });

  it("drops a launch cleared before its answer", async () => {
    const { f } = follower();
    f.launch(
      () => sendJson<Evaluation>("POST", `${base}/api/evaluations`, {}),
      (started) => started,
    );
    f.clear();
    await until(f, idle);
    expect(f.snapshot().job).toBeNull();
    expect(requests).toEqual(["POST /api/evaluations"]);
  });

  it("kills the followed job at its kill URL and shows the state the kill answers", async () => {
    const { f } = follower();
    const gone = hungUp("held");
    f.follow("held");
    await until(f, (s) => s.job?.state === "running");
    f.kill();
    expect(f.snapshot().pending).toBe(true);
    const killed = await until(f, (s) => !s.pending);
    expect(killed).toMatchObject({
      job: run("held", 1, { state: "canceling" }),
      following: true,
      error: null,
    });
    expect(requests).toEqual(["GET /api/evaluations/held/events", "POST /api/evaluations/held/kill"]);
    f.close();
    await gone;
  });

  it("shows a refused kill after its words", async () => {
    const { f } = follower({ notKilled: "The run was not killed" });
    f.kill("ended");
    const end = await until(f, (s) => !s.pending);
    expect(end.error).toBe("The run was not killed: The run has already ended.");
    expect(requests).toEqual(["POST /api/evaluations/ended/kill"]);
  });

  it("cannot kill a job of a kind without a kill URL", async () => {
    const kind = evaluations(false);
    expect(kind.kill).toBeNull();
    const { f } = follower({}, kind);
    f.kill("held");
    expect(f.snapshot().pending).toBe(false);
    expect(requests).toEqual([]);
  });
});

describe("useJob", () => {
  it("renders nothing followed yet, with kill only for a kind that can be killed", () => {
    const rendered: JobController<Evaluation>[] = [];
    function Probe({ kind }: { kind: JobKind<Evaluation> }) {
      rendered.push(useJob(kind));
      return null;
    }
    renderToStaticMarkup(<Probe kind={evaluations()} />);
    renderToStaticMarkup(<Probe kind={evaluations(false)} />);
    const [killable, plain] = rendered;
    expect(killable).toMatchObject({ job: null, following: false, pending: false, error: null });
    expect(typeof killable?.kill).toBe("function");
    expect(typeof killable?.follow).toBe("function");
    expect(plain?.kill).toBeNull();
  });
});

describe("the kinds of this client", () => {
  it("read, follow and kill at the URLs their endpoints have", async () => {
    const asked: string[] = [];
    vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
      asked.push(`${init.method ?? "GET"} ${url} ${(init.headers as Record<string, string>).accept}`);
      const type = url.endsWith("/events") ? "text/event-stream" : "application/json";
      return Promise.resolve(
        new Response(type === "application/json" ? "{}" : "", { headers: { "content-type": type } }),
      );
    });
    try {
      const signal = new AbortController().signal;
      const drain = async (events: AsyncGenerator<unknown>) => {
        for await (const _ of events) void _;
      };
      await ingestJobs.read("job 1", signal);
      await drain(ingestJobs.events("job 1", signal));
      await graphBuilds.read("r1", signal);
      await drain(graphBuilds.events("r1", signal));
      await graphBuilds.kill("r1");
      await backupRuns.graph.read("r2", signal);
      await drain(backupRuns.rag.events("r2", signal));
      expect(ingestJobs.kill).toBeNull();
      expect(backupRuns.rag.kill).toBeNull();
    } finally {
      vi.unstubAllGlobals();
    }
    expect(asked).toEqual([
      "GET /api/ingest/job%201 application/json",
      "GET /api/ingest/job%201/events text/event-stream",
      "GET /api/graph/builds/r1 application/json",
      "GET /api/graph/builds/r1/events text/event-stream",
      "POST /api/graph/builds/r1/kill application/json",
      "GET /api/backups/graph/runs/r2 application/json",
      "GET /api/backups/rag/runs/r2/events text/event-stream",
    ]);
  });
});
