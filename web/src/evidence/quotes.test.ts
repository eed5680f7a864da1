import { describe, expect, it } from "vitest";

import type { Source } from "../api/types";
import { withQuotes } from "../turns/state";
import { markedPieces, previewSpan } from "./quotes";

const content = "Every Tern K2 carries a warranty of 27 months. Claims go to service.";

function source(n: number, quotes: Source["quotes"] = []): Source {
  return {
    n,
    chunk_id: `c${n}`,
    doc_id: "d",
    relative_path: "a.md",
    file_name: "a.md",
    file_type: "md",
    page: null,
    extraction: "text",
    chunk_index: 0,
    content,
    context: null,
    score: 1,
    trace: null,
    quotes,
  };
}

describe("quotes", () => {
  it("merges the answer's quotes into the sources they quote", () => {
    const merged = withQuotes(
      [source(1), source(2)],
      [{ source: 2, text: "Every Tern K2 carries a warranty of 27 months.", start: 0, end: 46 }],
    );
    expect(merged[0]?.quotes).toEqual([]);
    expect(merged[1]?.quotes).toEqual([
      { text: "Every Tern K2 carries a warranty of 27 months.", start: 0, end: 46 },
    ]);
  });

  it("marks the quoted part of a passage and keeps the rest", () => {
    const pieces = markedPieces(content, [{ text: "", start: 0, end: 46 }]);
    expect(pieces).toEqual([
      { text: "Every Tern K2 carries a warranty of 27 months.", quoted: true },
      { text: " Claims go to service.", quoted: false },
    ]);
    expect(pieces.map((p) => p.text).join("")).toBe(content);
    expect(markedPieces(content, [])).toEqual([{ text: content, quoted: false }]);
  });

  it("highlights the quote in the preview, or the whole passage when nothing is quoted", () => {
    expect(previewSpan(source(1, [{ text: "", start: 47, end: 68 }]))).toEqual({ start: 47, end: 68 });
    expect(previewSpan(source(1))).toBeNull();
    expect(previewSpan(source(1, [{ text: "", start: 47, end: 999 }]))).toBeNull(); // stale
  });
});
