import { describe, expect, it } from "vitest";

import { SseParser, readSse } from "./sse";

function parseAll(...chunks: string[]) {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.push(chunk));
}

describe("SseParser", () => {
  it("parses named events with JSON data", () => {
    const events = parseAll('event: token\r\ndata: {"delta":"Hi"}\r\n\r\n');
    expect(events).toEqual([{ event: "token", data: '{"delta":"Hi"}', id: null }]);
  });

  it("defaults the event name to message and joins data lines with newlines", () => {
    expect(parseAll("data: a\ndata:b\ndata\n\n")).toEqual([{ event: "message", data: "a\nb\n", id: null }]);
  });

  it("drops exactly one leading space of a value", () => {
    expect(parseAll("data:  two\n\n")[0]?.data).toBe(" two");
  });

  it("skips comments such as keep-alive pings", () => {
    const events = parseAll(": ping - 2026-01-01\r\n\r\nevent: done\r\ndata: {}\r\n\r\n");
    expect(events.map((e) => e.event)).toEqual(["done"]);
  });

  it("does not dispatch an event without data, and resets its name", () => {
    expect(parseAll("event: lonely\n\ndata: x\n\n")).toEqual([{ event: "message", data: "x", id: null }]);
  });

  it("reassembles events split anywhere, including inside a CRLF", () => {
    const wire =
      'event: retrieval\r\ndata: {"query":"kettle"}\r\n\r\nevent: token\r\ndata: {"delta":" ok"}\r\n\r\n';
    const whole = parseAll(wire);
    expect(whole).toHaveLength(2);
    for (let cut = 1; cut < wire.length; cut++) {
      expect(parseAll(wire.slice(0, cut), wire.slice(cut))).toEqual(whole);
    }
    expect(parseAll(...wire.split(""))).toEqual(whole);
  });

  it("accepts bare CR line endings", () => {
    expect(parseAll("event: e\rdata: 1\r\r")).toEqual([{ event: "e", data: "1", id: null }]);
  });

  it("keeps the last event id and ignores retry and unknown fields", () => {
    expect(parseAll("id: 7\nretry: 10\nfoo: bar\ndata: x\n\ndata: y\n\n")).toEqual([
      { event: "message", data: "x", id: "7" },
      { event: "message", data: "y", id: "7" },
    ]);
  });

  it("strips a byte order mark only at the very start of the stream", () => {
    // later, a BOM is part of the field name, so that line is an unknown field
    expect(parseAll("\uFEFFdata: x\n\n", "\uFEFFdata: y\n\n").map((e) => e.data)).toEqual(["x"]);
  });

  it("discards an event left unterminated at the end", () => {
    expect(parseAll("data: complete\n\ndata: torn")).toHaveLength(1);
  });
});

describe("readSse", () => {
  it("decodes UTF-8 split across byte chunks", async () => {
    const bytes = new TextEncoder().encode('event: token\ndata: {"delta":"café ☕"}\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(Uint8Array.of(byte));
        controller.close();
      },
    });
    const events = [];
    for await (const event of readSse(body)) events.push(event);
    expect(events).toEqual([{ event: "token", data: '{"delta":"café ☕"}', id: null }]);
  });
});
