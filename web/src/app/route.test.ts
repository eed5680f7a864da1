import { describe, expect, it } from "vitest";

import { parseRoute, routeHash } from "./route";

describe("routes", () => {
  it("reads the screens from the hash", () => {
    expect(parseRoute("")).toEqual({ view: "chat", conversationId: null });
    expect(parseRoute("#/")).toEqual({ view: "chat", conversationId: null });
    expect(parseRoute("#/corpus")).toEqual({ view: "corpus" });
    expect(parseRoute("#/c/abc123")).toEqual({ view: "chat", conversationId: "abc123" });
    expect(parseRoute("#/nowhere")).toEqual({ view: "chat", conversationId: null });
  });

  it("leaves in-page anchors alone", () => {
    expect(parseRoute("#question")).toBeNull();
    expect(parseRoute("#source-t1-2")).toBeNull();
  });

  it("round-trips conversation ids, escaping what a hash cannot hold", () => {
    for (const id of ["c1", "a b/c#d", "\u00e9t\u00e9"]) {
      expect(parseRoute(routeHash({ view: "chat", conversationId: id }))).toEqual({
        view: "chat",
        conversationId: id,
      });
    }
    expect(routeHash({ view: "chat", conversationId: "a b/c" })).toBe("#/c/a%20b%2Fc");
    expect(routeHash({ view: "corpus" })).toBe("#/corpus");
    expect(parseRoute("#/c/%E0%A4%A")).toEqual({ view: "chat", conversationId: null });
  });

  it("reads and writes the graph screen with its entity and day", () => {
    expect(parseRoute("#/graph")).toEqual({ view: "graph", entity: null, day: null });
    const route = { view: "graph" as const, entity: "Maya Chen", day: "iMessage;+;chat61::2026-03-02" };
    expect(parseRoute(routeHash(route))).toEqual(route);
    expect(routeHash({ view: "graph", entity: null, day: null })).toBe("#/graph");
    expect(routeHash({ view: "graph", entity: "A&B", day: null })).toBe("#/graph?entity=A%26B");
  });

  it("reads and writes one document of the corpus and one archive of the graph", () => {
    expect(parseRoute("#/corpus?path=manuals%2Fkettle.md")).toEqual({
      view: "corpus",
      path: "manuals/kettle.md",
    });
    expect(routeHash({ view: "corpus", path: "a b/c&d.md" })).toBe("#/corpus?path=a+b%2Fc%26d.md");
    expect(parseRoute(routeHash({ view: "corpus", path: "a b/c&d.md" }))).toEqual({
      view: "corpus",
      path: "a b/c&d.md",
    });
    expect(routeHash({ view: "corpus", path: null })).toBe("#/corpus");
    const archive = { view: "graph" as const, entity: null, day: null, archive: "phones/chat.db" };
    expect(routeHash(archive)).toBe("#/graph?archive=phones%2Fchat.db");
    expect(parseRoute(routeHash(archive))).toEqual(archive);
  });

  it("reads and writes the codebase map with its spotlit card", () => {
    expect(parseRoute("#/map")).toEqual({ view: "map", card: null });
    expect(parseRoute("#/map?card=turn-runner")).toEqual({ view: "map", card: "turn-runner" });
    expect(routeHash({ view: "map", card: null })).toBe("#/map");
    expect(routeHash({ view: "map", card: "turn-runner" })).toBe("#/map?card=turn-runner");
  });
});
