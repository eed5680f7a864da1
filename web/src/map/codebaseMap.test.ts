/**
 * The codebase map's drift guard: every card's source reference is resolved against
 * the repository. A file renamed or removed, one cut shorter than the pinned line, or a
 * definition moved off it fails here, naming the card and where the symbol is now, so
 * the map is edited in the same change (`codebaseMap.data.ts`). Whether an edge still
 * tells the truth no test can say: that stays the reviewer's job.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, normalize, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import type { MapCard } from "./codebaseMap.data";
import { CODEBASE_MAP, cardPosition, downstreamOf, mapElements, mapProblems, relationsOf } from "./model";

/** The repository's root: this file is web/src/map/codebaseMap.test.ts. */
const REPO = resolve(fileURLToPath(new URL("../../..", import.meta.url)));

/** Why `card`'s source reference no longer holds, or null when it does. */
function sourceDrift(card: MapCard, root: string = REPO): string | null {
  const { path, line, symbol } = card.source;
  const where = `${card.id} points at ${path}:${line}`;
  const file = normalize(join(root, path));
  const inside = relative(root, file);
  if (isAbsolute(path) || inside.startsWith("..") || inside === "") {
    return `${where}, which is not a file inside the repository`;
  }
  if (!existsSync(file) || !statSync(file).isFile()) {
    return `${where}: the file is gone (renamed or deleted?); point the card at its new home in web/src/map/codebaseMap.data.ts`;
  }
  const lines = readFileSync(file, "utf8").replace(/\n$/, "").split("\n");
  if (!Number.isInteger(line) || line < 1 || line > lines.length) {
    return `${where}: the file has ${lines.length} lines now (truncated?); pin the card to where ${JSON.stringify(symbol)} is`;
  }
  if (!(lines[line - 1] ?? "").includes(symbol)) {
    const now = lines.findIndex((text) => text.includes(symbol));
    return now === -1
      ? `${where}: ${JSON.stringify(symbol)} is nowhere in the file any more (renamed?)`
      : `${where}: ${JSON.stringify(symbol)} moved to line ${now + 1}; update the card's line`;
  }
  return null;
}

describe("the codebase map's source references (drift guard)", () => {
  it("finds the repository", () => {
    expect(existsSync(join(REPO, "pyproject.toml"))).toBe(true);
    expect(existsSync(join(REPO, "web", "src", "map", "codebaseMap.data.ts"))).toBe(true);
  });

  it.each(CODEBASE_MAP.cards.map((card) => [card.id, card] as const))("%s", (_id, card) => {
    expect(sourceDrift(card)).toBeNull();
  });

  it("reports a renamed file, a truncated one and a moved definition", () => {
    // a repository of one file, so this check does not depend on the real cards
    const root = mkdtempSync(join(tmpdir(), "map-drift-"));
    mkdirSync(join(root, "pkg"));
    writeFileSync(
      join(root, "pkg", "mod.py"),
      '"""A module."""\n\n\ndef run_turn(services, request):\n    pass\n',
    );
    const card = (source: Partial<MapCard["source"]>): MapCard => ({
      ...(CODEBASE_MAP.cards[0] as MapCard),
      id: "probe",
      source: { path: "pkg/mod.py", line: 4, symbol: "def run_turn(", ...source },
    });
    try {
      expect(sourceDrift(card({}), root)).toBeNull();
      expect(sourceDrift(card({ path: "pkg/turns.py" }), root)).toBe(
        "probe points at pkg/turns.py:4: the file is gone (renamed or deleted?); point the card at its new home in web/src/map/codebaseMap.data.ts",
      );
      expect(sourceDrift(card({ line: 40 }), root)).toContain("the file has 5 lines now (truncated?)");
      expect(sourceDrift(card({ line: 3 }), root)).toContain('"def run_turn(" moved to line 4');
      expect(sourceDrift(card({ symbol: "def run_turns(" }), root)).toContain("is nowhere in the file");
      expect(sourceDrift(card({ path: "../outside.py" }), root)).toContain(
        "not a file inside the repository",
      );
      expect(sourceDrift(card({ path: "pkg" }), root)).toContain("the file is gone");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the codebase map's data", () => {
  it("is consistent: unique ids, known groups, edges between known cards, every card connected", () => {
    expect(mapProblems(CODEBASE_MAP)).toEqual([]);
  });

  it("covers the system: 35 to 60 cards in the six groups", () => {
    expect(CODEBASE_MAP.cards.length).toBeGreaterThanOrEqual(35);
    expect(CODEBASE_MAP.cards.length).toBeLessThanOrEqual(60);
    const groups = new Set(CODEBASE_MAP.cards.map((c) => c.group));
    expect([...groups].sort()).toEqual(["entry", "graph", "ingestion", "observability", "query", "stores"]);
  });

  it("finds problems in bad data", () => {
    const [a, b] = CODEBASE_MAP.cards as [MapCard, MapCard];
    const problems = mapProblems({
      groups: CODEBASE_MAP.groups,
      cards: [a, { ...a }, { ...b, at: a.at, group: a.group }],
      edges: [
        { from: a.id, to: "nowhere", label: "feeds" },
        { from: a.id, to: a.id, label: "" },
      ],
    });
    expect(problems).toContain(`two cards are called ${a.id}`);
    expect(problems).toContain(`an edge names an unknown card nowhere (${a.id} -> nowhere)`);
    expect(problems).toContain(`${a.id} points at itself`);
    expect(problems).toContain(`no edge touches ${b.id}`);
    expect(problems.some((p) => p.startsWith(`${b.id} is drawn on top of`))).toBe(true);
  });
});

describe("spotlight and relations", () => {
  it("follows edges forward, transitively, without the start", () => {
    const down = downstreamOf(CODEBASE_MAP, "reranked");
    expect(down).toContain("hybrid");
    expect(down).toContain("semantic"); // through hybrid
    expect(down).toContain("postgres"); // through semantic
    expect(down).not.toContain("reranked");
    expect(down).not.toContain("turn-runner"); // upstream
    expect(downstreamOf(CODEBASE_MAP, "graph-workdir").size).toBe(0);
  });

  it("tells a card's relations both ways, with the edge's words", () => {
    const { out, in: into } = relationsOf(CODEBASE_MAP, "reranked");
    expect(out.map((r) => [r.card.id, r.label])).toContainEqual([
      "hybrid",
      "reranked composes a base retriever (RERANK_BASE_METHOD, default hybrid)",
    ]);
    expect(into.map((r) => r.card.id)).toEqual(["retrievers"]);
  });

  it("draws groups as compound nodes holding their cards, at fixed positions", () => {
    const elements = mapElements(CODEBASE_MAP);
    const turn = elements.find((e) => e.data.id === "turn-runner");
    expect(turn?.data.parent).toBe("group:query");
    expect(turn?.position).toEqual(
      cardPosition(CODEBASE_MAP, CODEBASE_MAP.cards.find((c) => c.id === "turn-runner") as MapCard),
    );
    expect(elements.filter((e) => e.classes === "group")).toHaveLength(CODEBASE_MAP.groups.length);
    expect(elements.filter((e) => e.group === "edges")).toHaveLength(CODEBASE_MAP.edges.length);
  });
});
