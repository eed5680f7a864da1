/**
 * Page previews of evidence: what the panel says when there is no page, where the
 * highlight boxes sit, and the zoom steps of the full-size view.
 */
import type { ChunkPreview, HighlightBox } from "../api/types";

type Reason = NonNullable<ChunkPreview["reason"]>;

/** A short heading per reason; the service's message says the specifics. */
const REASON_TITLES: Record<Reason, string> = {
  not_indexed: "The passage is no longer indexed",
  not_paged: "No pages in this format",
  outside_corpus: "The file lies outside the corpus",
  file_missing: "The file is gone",
  file_changed: "The file changed since it was indexed",
  converter_missing: "The deck converter is not installed",
  conversion_failed: "The deck could not be converted",
  unreadable: "The file could not be read",
  ocr_unavailable: "The scanned page needs OCR",
  page_not_found: "The passage is on no page any more",
};

/** What the panel shows instead of a page, or null when it shows the page (or nothing
 * at all: formats without pages just keep their text view). */
export function previewNote(preview: ChunkPreview): { title: string; message: string } | null {
  if (preview.available || preview.reason === "not_paged") return null;
  const reason = preview.reason ?? "unreadable";
  const message = (preview.message ?? "").trim();
  return {
    title: REASON_TITLES[reason],
    message: message && !/[.!?]$/.test(message) ? `${message}.` : message,
  };
}

/** A highlight box as CSS percentages of the page image. */
export function boxStyle(box: HighlightBox): { left: string; top: string; width: string; height: string } {
  const pct = (value: number) => `${(value * 100).toFixed(3)}%`;
  return { left: pct(box.x), top: pct(box.y), width: pct(box.width), height: pct(box.height) };
}

/** Widths of the zoomed page, as a share of the dialog's width. */
export const ZOOM_STEPS: readonly number[] = [1, 1.5, 2, 3];
export const MIN_ZOOM = 1;
export const MAX_ZOOM = 3;

/** The next zoom step up (`+1`) or down (`-1`) from `current`, clamped to the steps. */
export function nextZoom(current: number, direction: 1 | -1): number {
  const index = ZOOM_STEPS.findIndex((step) => step >= current);
  const at = index === -1 ? ZOOM_STEPS.length - 1 : index;
  const next = Math.min(Math.max(at + direction, 0), ZOOM_STEPS.length - 1);
  return ZOOM_STEPS[next] ?? MIN_ZOOM;
}

/** "Page 3 of 12" (or "Slide 3 of 12" for a deck). */
export function pageLabel(preview: ChunkPreview, fileName: string): string {
  const noun = /\.pptx$/i.test(fileName) ? "Slide" : "Page";
  const of = preview.page_count ? ` of ${preview.page_count}` : "";
  return `${noun} ${preview.page ?? "?"}${of}`;
}
