import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { GraphBuild } from "./types";
import { getEvents, getJson } from "./client";
import { followJob, RECONNECTS } from "./jobs";
import { parseBuildEvent } from "../graph/builds";
import { graphBuild } from "../test/fixtures";

// A real HTTP server on loopback playing a build's event stream and its GET.
let server: Server;
let base = "";
let streams = 0;
const processed = (n: number): GraphBuild =>
  graphBuild({ progress: { total: 2, processed: n, processing: 2 - n, pending: 0, failed: 0 } });
const finished = graphBuild({
  state: "succeeded",
  status: "SUCCESS",
  done: true,
  progress: { total: 2, processed: 2, processing: 0, pending: 0, failed: 0 },
});

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const stream = { "content-type": "text/event-stream" };
    if (req.url === "/done/events") {
      res.writeHead(200, stream);
      res.end(
        sse("progress", processed(0)) + ": ping\n\n" + sse("progress", processed(1)) + sse("done", finished),
      );
    } else if (req.url === "/drops/events") {
      // the first stream closes early; the second finishes the job
      streams++;
      res.writeHead(200, stream);
      res.end(streams === 1 ? sse("progress", processed(1)) : sse("done", finished));
    } else if (req.url === "/drops" || req.url === "/never") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(processed(1)));
    } else if (req.url === "/never/events") {
      res.writeHead(200, stream);
      res.end(sse("progress", processed(1)));
    } else {
      res.writeHead(200, stream);
      res.end(sse("error", { code: "dagster_unavailable", message: "Dagster stopped answering" }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function source(path: string) {
  return {
    events: (signal: AbortSignal) => getEvents(`${base}/${path}/events`, signal),
    parse: parseBuildEvent,
    read: (signal: AbortSignal) => getJson<GraphBuild>(`${base}/${path}`, signal),
    done: (b: GraphBuild) => b.done,
  };
}

describe("followJob", () => {
  it("reports every progress event and returns the final state", async () => {
    const seen: (number | undefined)[] = [];
    const final = await followJob(source("done"), new AbortController().signal, (b) =>
      seen.push(b.progress?.processed),
    );
    expect(seen).toEqual([0, 1, 2]);
    expect(final).toEqual(finished);
  });

  it("reads the job and reconnects when a stream closes before the job is done", async () => {
    const seen: string[] = [];
    const final = await followJob(source("drops"), new AbortController().signal, (b) => seen.push(b.state));
    expect(final.done).toBe(true);
    expect(streams).toBe(2);
    expect(seen).toEqual(["running", "running", "succeeded"]);
  });

  it("gives up after a bounded number of early closes", async () => {
    let reads = 0;
    const promise = followJob(source("never"), new AbortController().signal, () => reads++);
    await expect(promise).rejects.toMatchObject({ code: "stream_incomplete" });
    expect(reads).toBe(2 * (RECONNECTS + 1)); // one event and one read per attempt
  });

  it("raises an in-band error event", async () => {
    await expect(followJob(source("fails"), new AbortController().signal, () => {})).rejects.toMatchObject({
      name: "ApiError",
      code: "dagster_unavailable",
      message: "Dagster stopped answering",
    });
  });
});
