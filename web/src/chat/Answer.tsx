/** An answer's text with its `[n]` citations as links to the evidence. */
import type { MouseEvent } from "react";

import { sourceElementId, splitCitations } from "../turns/citations";
import { formatIndexAsOf } from "../feedback/state";

interface AnswerTextProps {
  turnId: string;
  text: string;
  sourceCount: number;
  onCite: (n: number) => void;
}

/** Renders the answer; clicking citation `n` calls `onCite(n)` instead of jumping. */
export function AnswerText({ turnId, text, sourceCount, onCite }: AnswerTextProps) {
  const parts = splitCitations(text, sourceCount);
  return (
    <>
      {parts.map((part, i) =>
        part.kind === "text" ? (
          <span key={i}>{part.text}</span>
        ) : (
          <a
            key={i}
            className="citation"
            href={`#${sourceElementId(turnId, part.n)}`}
            aria-label={`Source ${part.n}`}
            onClick={(event: MouseEvent<HTMLAnchorElement>) => {
              event.preventDefault();
              onCite(part.n);
            }}
          >
            [{part.n}]
          </a>
        ),
      )}
    </>
  );
}

/** "index as of 3 Dec 14:02": the index state the answer was given from. */
export function IndexAsOf({ at }: { at: string | null | undefined }) {
  if (!at) return null;
  return (
    <p className="index-as-of" title={`The document index last changed at ${at}`}>
      index as of <time dateTime={at}>{formatIndexAsOf(at)}</time>
    </p>
  );
}
