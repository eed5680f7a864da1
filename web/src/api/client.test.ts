import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import { streamChat } from "./chat";
import { API_KEY_STORAGE, ApiError, getBlob, getJson, postEvents } from "./client";

// A real HTTP server on loopback speaking the API's shapes.
let server: Server;
let base = "";

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if (req.url === "/stream" || req.url === "/api/chat") {
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
        const question = (JSON.parse(body) as { question: string }).question;
        res.write(": ping\r\n\r\n");
        res.write(
          `event: retrieval\r\ndata: {"query":${JSON.stringify(question)},"method":"bm25","sources":[],"timings_ms":{}}\r\n\r\n`,
        );
        res.write('event: token\r\ndata: {"delta":"Hel');
        setTimeout(
          () =>
            res.end('lo"}\r\n\r\nevent: done\r\ndata: {"answer":"Hello","cited":[],"timings_ms":{}}\r\n\r\n'),
          20,
        );
      } else if (req.url === "/hang") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('event: token\r\ndata: {"delta":"a"}\r\n\r\n');
      } else if (req.url === "/keyed") {
        const ok = req.headers.authorization === "Bearer s3cret";
        res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
        res.end(ok ? '{"ok":true}' : '{"code":"api_key_required","message":"key please"}');
      } else if (req.url === "/png") {
        res.writeHead(200, { "content-type": "image/png", "cache-control": "private, immutable" });
        res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      } else if (req.url === "/json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      } else if (req.url === "/plain-error") {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end("Bad gateway from proxy");
      } else {
        res.writeHead(503, { "content-type": "application/json" });
        res.end('{"code":"stores_unavailable","message":"Cannot connect to Postgres"}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("postEvents", () => {
  it("POSTs JSON and yields the events of the streamed response", async () => {
    const names: string[] = [];
    for await (const event of postEvents(`${base}/stream`, { question: "hi" })) names.push(event.event);
    expect(names).toEqual(["retrieval", "token", "done"]);
  });

  it("raises the service's error body as an ApiError", async () => {
    const events = postEvents(`${base}/down`, {});
    await expect(events.next()).rejects.toMatchObject({
      name: "ApiError",
      status: 503,
      code: "stores_unavailable",
      message: "Cannot connect to Postgres",
    });
  });

  it("reports a non-JSON error and a non-stream answer clearly", async () => {
    await expect(postEvents(`${base}/plain-error`, {}).next()).rejects.toThrow(
      "HTTP 502: Bad gateway from proxy",
    );
    await expect(postEvents(`${base}/json`, {}).next()).rejects.toThrow(
      /answered application\/json, not an event stream/,
    );
  });

  it("stops reading when aborted", async () => {
    const abort = new AbortController();
    const seen: string[] = [];
    const read = (async () => {
      for await (const event of postEvents(`${base}/hang`, {}, abort.signal)) {
        seen.push(event.data);
        abort.abort();
      }
    })();
    await expect(read).rejects.toMatchObject({ name: "AbortError" });
    expect(seen).toEqual(['{"delta":"a"}']);
  });

  it("reports an unreachable server as a network error", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await postEvents(`http://127.0.0.1:${port}/x`, {})
      .next()
      .catch((exc: unknown) => exc);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("network_error");
  });
});

describe("getJson and streamChat", () => {
  it("reads JSON", async () => {
    expect(await getJson(`${base}/json`)).toEqual({ ok: true });
  });

  it("streamChat types the chat events", async () => {
    const events = [];
    for await (const event of streamChat({ question: "kettle?" }, undefined, base)) events.push(event);
    expect(events.map((e) => e.type)).toEqual(["retrieval", "token", "done"]);
    expect(events[0]).toMatchObject({ type: "retrieval", data: { query: "kettle?" } });
    expect(events[1]).toEqual({ type: "token", data: { delta: "Hello" } });
  });
});

describe("the API key", () => {
  it("is asked for once on a 401, kept, and sent from then on", async () => {
    const kept = new Map<string, string>();
    vi.stubGlobal("localStorage", {
      getItem: (k: string) => kept.get(k) ?? null,
      setItem: (k: string, v: string) => void kept.set(k, v),
    });
    const prompt = vi.fn(() => "s3cret");
    vi.stubGlobal("prompt", prompt);
    try {
      expect(await getJson(`${base}/keyed`)).toEqual({ ok: true });
      expect(kept.get(API_KEY_STORAGE)).toBe("s3cret");
      expect(await getJson(`${base}/keyed`)).toEqual({ ok: true });
      expect(prompt).toHaveBeenCalledTimes(1);
      prompt.mockReturnValue("");
      kept.set(API_KEY_STORAGE, "wrong");
      await expect(getJson(`${base}/keyed`)).rejects.toMatchObject({ status: 401, code: "api_key_required" });
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe("getBlob", () => {
  it("reads a binary answer whole, with its type", async () => {
    const blob = await getBlob(`${base}/png`);
    expect(blob.type).toBe("image/png");
    expect([...new Uint8Array(await blob.arrayBuffer())]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it("turns an error answer into an ApiError", async () => {
    await expect(getBlob(`${base}/missing`)).rejects.toMatchObject({
      status: 503,
      code: "stores_unavailable",
    });
  });
});
