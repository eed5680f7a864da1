import { describe, expect, it } from "vitest";

import { documentInfo } from "../test/fixtures";
import {
  buildTree,
  checkState,
  contextualizationProgress,
  descendantFiles,
  resolveSelection,
  statusCounts,
  stillWorking,
  toggle,
} from "./tree";

const doc = documentInfo;

const DOCS = [
  doc("soup.txt"),
  doc("manuals/kettle.md"),
  doc("manuals/2024/toaster.md"),
  doc("manuals/2024/fridge10.md"),
  doc("manuals/2024/fridge9.md"),
  doc("manuals/new.md", { doc_id: null, status: "pending", n_chunks: null }),
  doc("Aurora/power.md"),
];

describe("buildTree", () => {
  it("nests folders from relative paths, folders first, names in natural order", () => {
    const root = buildTree(DOCS);
    expect(root.folders.map((f) => f.path)).toEqual(["Aurora", "manuals"]);
    expect(root.files.map((f) => f.path)).toEqual(["soup.txt"]);
    const manuals = root.folders[1]!;
    expect(manuals.folders.map((f) => f.path)).toEqual(["manuals/2024"]);
    expect(manuals.files.map((f) => f.name)).toEqual(["kettle.md", "new.md"]);
    expect(manuals.folders[0]!.files.map((f) => f.name)).toEqual(["fridge9.md", "fridge10.md", "toaster.md"]);
    expect(descendantFiles(root)).toHaveLength(DOCS.length);
  });

  it("counts statuses below a folder", () => {
    const manuals = buildTree(DOCS).folders[1]!;
    expect(statusCounts(manuals)).toEqual({ indexed: 4, pending: 1 });
  });
});

describe("folder selection", () => {
  const root = buildTree(DOCS);
  const manuals = root.folders[1]!;
  const year = manuals.folders[0]!;

  it("selects every indexed descendant of a folder, skipping pending files", () => {
    const selected = toggle(manuals, new Set());
    expect([...selected].sort()).toEqual([
      "manuals/2024/fridge10.md",
      "manuals/2024/fridge9.md",
      "manuals/2024/toaster.md",
      "manuals/kettle.md",
    ]);
    expect(checkState(manuals, selected)).toBe("checked");
    expect(checkState(year, selected)).toBe("checked");
    expect(checkState(root, selected)).toBe("mixed");
  });

  it("a checked folder's toggle clears its descendants and nothing else", () => {
    const selected = toggle(manuals, new Set(["soup.txt"]));
    const cleared = toggle(manuals, selected);
    expect([...cleared]).toEqual(["soup.txt"]);
    expect(checkState(manuals, cleared)).toBe("unchecked");
  });

  it("a partly selected folder becomes fully selected", () => {
    const partial = new Set(["manuals/2024/toaster.md"]);
    expect(checkState(manuals, partial)).toBe("mixed");
    expect(checkState(manuals, toggle(manuals, partial))).toBe("checked");
  });

  it("files toggle alone, and pending files cannot be selected", () => {
    const kettle = manuals.files[0]!;
    const pending = manuals.files[1]!;
    expect([...toggle(kettle, new Set())]).toEqual(["manuals/kettle.md"]);
    expect([...toggle(kettle, new Set(["manuals/kettle.md"]))]).toEqual([]);
    expect([...toggle(pending, new Set())]).toEqual([]);
  });

  it("resolves the selection to doc ids of documents still listed and indexed", () => {
    const selected = new Set(["manuals/kettle.md", "gone.md", "manuals/new.md", "soup.txt"]);
    const { paths, docIds } = resolveSelection(DOCS, selected);
    expect([...paths].sort()).toEqual(["manuals/kettle.md", "soup.txt"]);
    expect(docIds.sort()).toEqual(["id:manuals/kettle.md", "id:soup.txt"]);
  });
});

describe("contextualization progress", () => {
  it("reads 'contextualized n/m' only while blurbs are still being written", () => {
    expect(
      contextualizationProgress(doc("a.md", { n_chunks: 5, n_contextualized: 2, contextualizing: true })),
    ).toBe("contextualized 2/5");
    expect(contextualizationProgress(doc("a.md", { n_chunks: 5, n_contextualized: 5 }))).toBeNull();
    expect(contextualizationProgress(doc("a.md", { n_chunks: 5, n_contextualized: 0 }))).toBeNull(); // blurbs off
  });

  it("keeps the list polled while a file is contextualized, not after", () => {
    const done = [doc("a.md"), doc("b.md")];
    expect(stillWorking(done)).toBe(false);
    expect(stillWorking([...done, doc("c.md", { n_contextualized: 0, contextualizing: true })])).toBe(true);
    expect(stillWorking([...done, doc("d.md", { doc_id: null, status: "pending", n_chunks: null })])).toBe(
      true,
    );
  });
});
