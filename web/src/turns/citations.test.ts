import { describe, expect, it } from "vitest";

import { sourceElementId, splitCitations } from "./citations";

describe("splitCitations", () => {
  it("turns in-range [n] into citations and keeps the text around them", () => {
    expect(splitCitations("It lasts 27 months [1][2].", 2)).toEqual([
      { kind: "text", text: "It lasts 27 months " },
      { kind: "cite", n: 1 },
      { kind: "cite", n: 2 },
      { kind: "text", text: "." },
    ]);
  });

  it("leaves out-of-range numbers, zero and non-citations as text", () => {
    expect(splitCitations("See [0], [3], [x] and [1234] but [2]", 2)).toEqual([
      { kind: "text", text: "See [0], [3], [x] and [1234] but " },
      { kind: "cite", n: 2 },
    ]);
  });

  it("shows a half-streamed citation as typed", () => {
    expect(splitCitations("warranty [1", 3)).toEqual([{ kind: "text", text: "warranty [1" }]);
  });

  it("handles an empty answer and an answer that is only a citation", () => {
    expect(splitCitations("", 1)).toEqual([]);
    expect(splitCitations("[1]", 1)).toEqual([{ kind: "cite", n: 1 }]);
  });

  it("gives each turn's sources their own element ids", () => {
    expect(sourceElementId("t1", 2)).toBe("source-t1-2");
    expect(sourceElementId("t1", 2)).not.toBe(sourceElementId("t2", 2));
  });
});
