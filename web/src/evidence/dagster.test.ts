import { describe, expect, it } from "vitest";

import { partitionUrl } from "./dagster";

describe("partitionUrl", () => {
  it("links the indexed_document partition keyed by the relative path", () => {
    expect(partitionUrl("http://127.0.0.1:3000/", "station/power notes.md")).toBe(
      "http://127.0.0.1:3000/assets/indexed_document?view=partitions&partition=station%2Fpower%20notes.md",
    );
  });

  it("escapes characters that would break the query string", () => {
    const url = new URL(partitionUrl("http://dagster:3000", "a&b=c#d?.md"));
    expect(url.searchParams.get("partition")).toBe("a&b=c#d?.md");
    expect(url.pathname).toBe("/assets/indexed_document");
  });
});
