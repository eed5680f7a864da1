/**
 * The question box: Enter asks, Shift+Enter adds a line, Stop aborts the answer. Above
 * it, what to ask: the documents or the messages (the message graph), a choice kept
 * across reloads and conversations.
 */
import { useState, type FormEvent, type KeyboardEvent } from "react";

import type { Corpus } from "../api/types";
import { messagesNote, type GraphAvailability } from "../graph/availability";

interface ComposerProps {
  busy: boolean;
  /** No question can be asked (a saved conversation is still loading). */
  disabled?: boolean;
  onAsk: (question: string) => void;
  onStop: () => void;
  /** The user's choice of corpus. */
  corpus: Corpus;
  onCorpus: (corpus: Corpus) => void;
  /** Whether the message graph can be asked (`GET /api/graph/status`). */
  graph: GraphAvailability;
}

export const QUESTION_INPUT_ID = "question";

const CHOICES: { corpus: Corpus; label: string }[] = [
  { corpus: "rag", label: "Documents" },
  { corpus: "graph", label: "Messages" },
];

export function Composer({ busy, disabled = false, onAsk, onStop, corpus, onCorpus, graph }: ComposerProps) {
  const [text, setText] = useState("");
  const question = text.trim();
  const graphOff = graph.state === "disabled";
  // while the graph is off the choice is kept, but the documents answer
  const asking: Corpus = graphOff ? "rag" : corpus;
  const note = messagesNote(graph);

  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    if (!question || busy || disabled) return;
    onAsk(question);
    setText("");
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) submit(event);
  };

  return (
    <form className="composer" onSubmit={submit} aria-label="Ask a question">
      <div className="composer-head">
        <label htmlFor={QUESTION_INPUT_ID}>Question</label>
        <fieldset className="corpus-choice" aria-describedby={note ? "corpus-note" : undefined}>
          <legend>Answer from</legend>
          {CHOICES.map((choice) => (
            <label key={choice.corpus} className={asking === choice.corpus ? "is-chosen" : undefined}>
              <input
                type="radio"
                name="corpus"
                value={choice.corpus}
                checked={asking === choice.corpus}
                disabled={choice.corpus === "graph" && graphOff}
                onChange={() => onCorpus(choice.corpus)}
              />
              {choice.label}
            </label>
          ))}
        </fieldset>
      </div>
      <div className="composer-row">
        <textarea
          id={QUESTION_INPUT_ID}
          rows={2}
          value={text}
          maxLength={4000}
          placeholder={
            asking === "graph"
              ? "Ask who, with whom and when, over your messages"
              : "Ask about your documents"
          }
          aria-describedby="composer-hint"
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
        />
        {busy ? (
          <button type="button" className="stop" onClick={onStop}>
            Stop
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!question || disabled}>
            Ask
          </button>
        )}
      </div>
      {note && (asking === "graph" || graphOff) && (
        <p id="corpus-note" className="hint corpus-note">
          {note}
        </p>
      )}
      <p id="composer-hint" className="hint">
        Enter to ask, Shift+Enter for a new line.
      </p>
    </form>
  );
}
