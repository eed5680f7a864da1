import { describe, expect, it } from "vitest";

import type { ChunkPreview } from "../api/types";
import { boxStyle, MAX_ZOOM, MIN_ZOOM, nextZoom, pageLabel, previewNote } from "./preview";

function preview(overrides: Partial<ChunkPreview> = {}): ChunkPreview {
  return { chunk_id: "d::0", available: true, page: 2, page_count: 3, highlights: [], ...overrides };
}

describe("previewNote", () => {
  it("says nothing for a shown page or a format without pages", () => {
    expect(previewNote(preview())).toBeNull();
    expect(previewNote(preview({ available: false, reason: "not_paged", message: "x" }))).toBeNull();
  });

  it("titles each failure and keeps the service's specifics", () => {
    const gone = previewNote(
      preview({
        available: false,
        reason: "file_missing",
        message: "a.pdf is no longer in the corpus folder",
      }),
    );
    expect(gone).toEqual({ title: "The file is gone", message: "a.pdf is no longer in the corpus folder." });
    expect(previewNote(preview({ available: false, reason: "file_changed" }))?.title).toBe(
      "The file changed since it was indexed",
    );
    expect(previewNote(preview({ available: false, reason: "converter_missing" }))?.title).toMatch(
      /converter/,
    );
  });
});

describe("boxStyle", () => {
  it("places a box in percentages of the page", () => {
    expect(boxStyle({ x: 0.1, y: 0.25, width: 0.5, height: 0.02 })).toEqual({
      left: "10.000%",
      top: "25.000%",
      width: "50.000%",
      height: "2.000%",
    });
  });
});

describe("nextZoom", () => {
  it("steps up and down and stops at the ends", () => {
    expect(nextZoom(MIN_ZOOM, 1)).toBe(1.5);
    expect(nextZoom(1.5, 1)).toBe(2);
    expect(nextZoom(2, -1)).toBe(1.5);
    expect(nextZoom(MIN_ZOOM, -1)).toBe(MIN_ZOOM);
    expect(nextZoom(MAX_ZOOM, 1)).toBe(MAX_ZOOM);
  });
});

describe("pageLabel", () => {
  it("names pages of PDFs and slides of decks", () => {
    expect(pageLabel(preview(), "report.pdf")).toBe("Page 2 of 3");
    expect(pageLabel(preview({ page: 1, page_count: 2 }), "deck.PPTX")).toBe("Slide 1 of 2");
  });
});
