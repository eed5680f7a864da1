import { describe, expect, it } from "vitest";

import { uploadForm, uploadSummary } from "./upload";

function file(name: string, text: string, lastModified: number, relativePath = ""): File {
  const f = new File([text], name, { lastModified });
  // a folder picker sets webkitRelativePath; a plain file input leaves it empty
  Object.defineProperty(f, "webkitRelativePath", { value: relativePath });
  return f;
}

describe("uploadForm", () => {
  it("sends files with parallel paths and mtimes, in order", async () => {
    const form = uploadForm([file("a.md", "alpha", 1_700_000_000_123), file("b.txt", "beta", 42)]);
    const parts = form.getAll("files") as File[];
    expect(parts.map((p) => p.name)).toEqual(["a.md", "b.txt"]);
    expect(await parts[0]!.text()).toBe("alpha");
    expect(form.getAll("paths")).toEqual(["a.md", "b.txt"]);
    expect(form.getAll("mtimes")).toEqual(["1700000000123", "42"]);
    expect(form.has("folder")).toBe(false);
  });

  it("uses a folder upload's relative paths and the target folder without stray slashes", () => {
    const form = uploadForm(
      [file("k.md", "k", 1, "manuals/kettle/k.md"), file("t.md", "t", 2, "manuals/t.md")],
      " /imports/2024/ ",
    );
    expect(form.getAll("paths")).toEqual(["manuals/kettle/k.md", "manuals/t.md"]);
    expect(form.get("folder")).toBe("imports/2024");
  });
});

describe("uploadSummary", () => {
  it("lists the outcomes present in a fixed order", () => {
    expect(uploadSummary({ results: [], counts: { refused: 1, stored: 2 } })).toBe(
      "2 stored \u00b7 1 refused",
    );
    expect(uploadSummary({ results: [], counts: {} })).toBe("nothing uploaded");
  });
});
