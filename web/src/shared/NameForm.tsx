/** An inline name editor (conversation titles, group names). */
import { useEffect, useRef, useState, type FormEvent } from "react";

import { describeError } from "../api/client";

/** An inline name editor: Enter saves, Escape cancels. */
export function NameForm({
  label,
  initial,
  submitLabel,
  onSave,
  onCancel,
}: {
  label: string;
  initial: string;
  submitLabel: string;
  onSave: (name: string) => Promise<void>;
  onCancel: () => void;
}) {
  const [name, setName] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim()) {
      setError("Enter a name.");
      return;
    }
    setBusy(true);
    try {
      await onSave(name.trim());
    } catch (exc) {
      setError(describeError(exc));
      setBusy(false);
    }
  };
  const errorId = `${label.replace(/\W+/g, "-")}-error`;
  return (
    <form className="name-form" onSubmit={submit}>
      <label>
        <span className="visually-hidden">{label}</span>
        <input
          ref={input}
          value={name}
          maxLength={200}
          aria-invalid={error !== null}
          aria-describedby={error ? errorId : undefined}
          onChange={(event) => setName(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Escape") {
              event.stopPropagation();
              onCancel();
            }
          }}
        />
      </label>
      <button type="submit" disabled={busy}>
        {submitLabel}
      </button>
      <button type="button" className="link-button" onClick={onCancel}>
        Cancel
      </button>
      {error && (
        <p id={errorId} className="field-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
