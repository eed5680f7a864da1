/**
 * The quotes an answer rests on: each answer sentence is checked against a verbatim
 * span of one passage, and the spans travel with the sources (`withQuotes` in
 * turns/state merges them in when `done` arrives). Here they are cut out of a card's
 * text to be marked, and turned into the span the page preview highlights.
 */
import type { QuoteSpan, Source } from "../api/types";

/** A passage's text cut into pieces, the quoted ones marked (overlaps merged). */
export function markedPieces(
  content: string,
  quotes: QuoteSpan[] | undefined,
): { text: string; quoted: boolean }[] {
  const spans = (quotes ?? [])
    .filter((q) => q.start >= 0 && q.end <= content.length && q.start < q.end)
    .map((q) => [q.start, q.end] as const)
    .sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [start, end] of spans) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  const pieces: { text: string; quoted: boolean }[] = [];
  let at = 0;
  for (const [start, end] of merged) {
    if (start > at) pieces.push({ text: content.slice(at, start), quoted: false });
    pieces.push({ text: content.slice(start, end), quoted: true });
    at = end;
  }
  if (at < content.length || pieces.length === 0) pieces.push({ text: content.slice(at), quoted: false });
  return pieces;
}

/** What the page preview highlights: from the first quote's start to the last one's
 * end, or null (the whole passage) when the answer quotes none of it. */
export function previewSpan(source: Source): { start: number; end: number } | null {
  const quotes = (source.quotes ?? []).filter((q) => q.start < q.end && q.end <= source.content.length);
  if (quotes.length === 0) return null;
  return {
    start: Math.min(...quotes.map((q) => q.start)),
    end: Math.max(...quotes.map((q) => q.end)),
  };
}
