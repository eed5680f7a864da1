/**
 * The client's import graph stays a DAG. `src/` is cut into feature folders (chat,
 * conversations, evidence, settings, …) over `api/` and `shared/`; a folder may use
 * another only if that one does not use it back, directly or through others. So:
 *
 * - no import cycle between modules, and none between folders (an arrow from a file
 *   in `a/` to one in `b/` is an arrow `a` → `b`);
 * - `api/` and `shared/` use no feature folder; nothing imports the root (`App.tsx`,
 *   `main.tsx`).
 *
 * Tests (`*.test.ts(x)`) and their fixtures (`test/`, `settings/testing.ts`) are left
 * out: nothing imports them, so they cannot close a cycle at run time, and a test may
 * render pieces of several features. Imports are read with TypeScript's own scanner
 * (`import`, `import type`, `export … from`, `import()`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = dirname(fileURLToPath(import.meta.url));
const ROOT = "(root)";
/** Folders below every feature: they may import only each other. */
const BASE = new Set(["api", "shared"]);

/** Source files under `src/`, as paths relative to it. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) ? [relative(SRC, path)] : [];
  });
}

function isTestOnly(file: string): boolean {
  return /\.test\.tsx?$/.test(file) || file.startsWith("test/") || file === "settings/testing.ts";
}

/** The folder a file belongs to: its first directory under `src/`. */
function folderOf(file: string): string {
  return file.includes("/") ? file.slice(0, file.indexOf("/")) : ROOT;
}

/** The module a relative specifier names, or null for a package (or a non-TS file). */
function resolveImport(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  if (!specifier.startsWith(".")) return null;
  const base = relative(SRC, resolve(SRC, dirname(from), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) {
    if (known.has(candidate)) return candidate;
  }
  if (/\.(css|svg|png|json)$/.test(specifier)) return null;
  throw new Error(`${from}: cannot resolve "${specifier}"`);
}

type Graph = Map<string, Set<string>>;

/** Every module and what it imports (test-only files left out, see above). */
function moduleGraph(): Graph {
  const files = sources();
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files.filter((f) => !isTestOnly(f))) {
    const text = readFileSync(join(SRC, file), "utf8");
    const imported = ts.preProcessFile(text, true, true).importedFiles;
    const targets = new Set<string>();
    for (const { fileName } of imported) {
      const target = resolveImport(file, fileName, known);
      if (target !== null) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The folder graph, with one import that makes each arrow (for the message). */
function folderGraph(modules: Graph): { graph: Graph; witness: Map<string, string> } {
  const graph: Graph = new Map();
  const witness = new Map<string, string>();
  for (const [file, targets] of modules) {
    const from = folderOf(file);
    if (!graph.has(from)) graph.set(from, new Set());
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from) continue;
      graph.get(from)?.add(to);
      if (!witness.has(`${from}>${to}`)) witness.set(`${from}>${to}`, `${file} imports ${target}`);
    }
  }
  return { graph, witness };
}

/** The cycles of a graph, one per strongly connected component that has one, each as a closed path. */
function findCycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;

  const pathWithin = (start: string, members: ReadonlySet<string>): string[] => {
    // breadth-first from `start` back to itself, staying inside the component
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const node = queue.shift() as string;
      for (const target of graph.get(node) ?? []) {
        if (!members.has(target)) continue;
        if (target === start) {
          const path = [start];
          for (let at = node; at !== start; at = previous.get(at) as string) path.splice(1, 0, at);
          return [...path, start];
        }
        if (!previous.has(target)) {
          previous.set(target, node);
          queue.push(target);
        }
      }
    }
    return [start, start];
  };

  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const members = new Set<string>();
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      members.add(member);
    } while (member !== node);
    if (members.size > 1 || graph.get(node)?.has(node)) cycles.push(pathWithin(node, members));
  };

  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

describe("findCycles", () => {
  const graph = (edges: Record<string, string[]>): Graph =>
    new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));

  it("finds none in a DAG", () => {
    expect(findCycles(graph({ chat: ["turns", "evidence"], evidence: ["turns"], turns: ["api"] }))).toEqual(
      [],
    );
  });

  it("finds an upward arrow, as the closed path it makes", () => {
    const cycles = findCycles(
      graph({ chat: ["conversations", "api"], conversations: ["chat", "api"], api: [] }),
    );
    expect(cycles).toEqual([["chat", "conversations", "chat"]]);
  });

  it("finds a longer cycle and a module importing itself", () => {
    const cycles = findCycles(graph({ a: ["b"], b: ["c"], c: ["a"], d: ["d"] }));
    expect(cycles).toEqual([
      ["a", "b", "c", "a"],
      ["d", "d"],
    ]);
  });
});

describe("the import graph of src/", () => {
  const modules = moduleGraph();
  const { graph: folders, witness } = folderGraph(modules);

  it("reads the imports (a sanity check on the scanner)", () => {
    expect(modules.get("App.tsx")).toContain("chat/useChat.ts");
    expect(modules.get("chat/ChatScreen.tsx")).toContain("evidence/EvidencePanel.tsx");
    expect(folders.get("chat")).toContain("turns");
  });

  it("has no import cycle between modules", () => {
    const cycles = findCycles(modules).map((cycle) => cycle.join(" \u2192 "));
    expect(cycles).toEqual([]);
  });

  it("has no cycle between folders", () => {
    const cycles = findCycles(folders).map((cycle) =>
      cycle
        .slice(1)
        .map((to, i) => `${cycle[i]} \u2192 ${to} (${witness.get(`${cycle[i]}>${to}`)})`)
        .join("; "),
    );
    expect(cycles).toEqual([]);
  });

  it("keeps api/ and shared/ below every feature, and the root above everything", () => {
    const wrong: string[] = [];
    for (const [from, targets] of folders) {
      for (const to of targets) {
        const why = witness.get(`${from}>${to}`);
        if (BASE.has(from) && !BASE.has(to)) wrong.push(`${from} uses the feature ${to} (${why})`);
        if (to === ROOT) wrong.push(`${from} imports the root (${why})`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
