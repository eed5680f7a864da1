/** Splitting an answer into text and `[n]` citations (the service's own rule). */

/** A run of answer text, or a citation of source `n`. */
export type AnswerPart = { kind: "text"; text: string } | { kind: "cite"; n: number };

// The service's pattern (varagity/generation/answer.py): one to three digits in brackets.
const CITATION = /\[(\d{1,3})\]/g;

/**
 * The answer as text runs and citations. Only numbers of sources that exist become
 * citations (the service ignores the others too); everything else stays text, so a
 * half-streamed "[1" is shown as typed until its bracket arrives.
 */
export function splitCitations(answer: string, sourceCount: number): AnswerPart[] {
  const parts: AnswerPart[] = [];
  let text = "";
  let last = 0;
  for (const match of answer.matchAll(CITATION)) {
    const n = Number(match[1]);
    if (n < 1 || n > sourceCount) continue;
    text += answer.slice(last, match.index);
    if (text) parts.push({ kind: "text", text });
    text = "";
    parts.push({ kind: "cite", n });
    last = match.index + match[0].length;
  }
  text += answer.slice(last);
  if (text) parts.push({ kind: "text", text });
  return parts;
}

/** The DOM id of source `n` of a turn in the evidence panel (a citation's target). */
export function sourceElementId(turnId: string, n: number): string {
  return `source-${turnId}-${n}`;
}
