import { describe, expect, it } from "vitest";

import { retrieval } from "../test/fixtures";
import { parseChatEvent } from "./chat";
import { ApiError } from "./client";

const message = (event: string, data: unknown) => ({
  event,
  data: typeof data === "string" ? data : JSON.stringify(data),
  id: null,
});

describe("parseChatEvent", () => {
  it("types each known event", () => {
    expect(parseChatEvent(message("retrieval", retrieval(1)))?.type).toBe("retrieval");
    expect(parseChatEvent(message("token", { delta: "a" }))).toEqual({ type: "token", data: { delta: "a" } });
    expect(parseChatEvent(message("reasoning", { delta: "b" }))).toEqual({
      type: "reasoning",
      data: { delta: "b" },
    });
    expect(parseChatEvent(message("queued", { position: 2, message: "1 ahead" }))).toEqual({
      type: "queued",
      data: { position: 2, reason: "answers", message: "1 ahead" },
    });
    const context = { position: 1, reason: "context", message: "writing search context" };
    expect(parseChatEvent(message("queued", context))).toEqual({ type: "queued", data: context });
    expect(parseChatEvent(message("done", { answer: "x", cited: [], timings_ms: {} }))?.type).toBe("done");
    expect(parseChatEvent(message("error", { code: "model_unavailable", message: "down" }))).toEqual({
      type: "error",
      data: { code: "model_unavailable", message: "down" },
    });
  });

  it("ignores events it does not know", () => {
    expect(parseChatEvent(message("ping", {}))).toBeNull();
    expect(parseChatEvent(message("message", "not json"))).toBeNull();
  });

  it("rejects known events with a broken payload, naming the event", () => {
    expect(() => parseChatEvent(message("token", "{"))).toThrow(/malformed `token` event \(not JSON\)/);
    expect(() => parseChatEvent(message("token", { text: "a" }))).toThrow(ApiError);
    expect(() => parseChatEvent(message("retrieval", { query: "q" }))).toThrow(/needs query and sources/);
    expect(() => parseChatEvent(message("done", [1]))).toThrow(/not an object/);
    expect(() => parseChatEvent(message("queued", { message: "?" }))).toThrow(/needs position/);
  });
});
