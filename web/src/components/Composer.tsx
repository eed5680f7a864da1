/** The question box: Enter asks, Shift+Enter adds a line, Stop aborts the answer. */
import { useState, type FormEvent, type KeyboardEvent } from "react";

interface ComposerProps {
  busy: boolean;
  /** No question can be asked (a saved conversation is still loading). */
  disabled?: boolean;
  onAsk: (question: string) => void;
  onStop: () => void;
}

export const QUESTION_INPUT_ID = "question";

export function Composer({ busy, disabled = false, onAsk, onStop }: ComposerProps) {
  const [text, setText] = useState("");
  const question = text.trim();

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
      <label htmlFor={QUESTION_INPUT_ID}>Question</label>
      <div className="composer-row">
        <textarea
          id={QUESTION_INPUT_ID}
          rows={2}
          value={text}
          maxLength={4000}
          placeholder="Ask about your documents"
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
      <p id="composer-hint" className="hint">
        Enter to ask, Shift+Enter for a new line.
      </p>
    </form>
  );
}
