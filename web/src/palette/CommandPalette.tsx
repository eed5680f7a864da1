/**
 * The ⌘K palette (Ctrl-K too): a modal search box over everything the app can jump to.
 * Typing ranks the items (`rankItems`); the arrow keys move through them, Enter (or a
 * click) chooses one, Escape closes. A combobox over a listbox, so a screen reader
 * hears the active option while focus stays in the box.
 *
 * Its own `<dialog>` rather than `shared/Modal`: closing by Escape gives focus back to
 * whatever had it, but choosing an item leaves focus to where the item leads (a
 * document's row, a setting's control).
 */
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from "react";

import { rankItems, type PaletteItem } from "./palette";

interface CommandPaletteProps {
  open: boolean;
  onClose: () => void;
  items: readonly PaletteItem[];
  /** Lists that could not be read. */
  notes?: readonly string[];
  loading?: boolean;
  onChoose: (item: PaletteItem) => void;
}

export function CommandPalette({
  open,
  onClose,
  items,
  notes = [],
  loading = false,
  onChoose,
}: CommandPaletteProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const opener = useRef<HTMLElement | null>(null);
  const giveFocusBack = useRef(true);
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const base = useId();
  const listId = `${base}-list`;
  const optionId = (i: number) => `${base}-option-${i}`;

  const results = useMemo(() => rankItems(items, query), [items, query]);
  const current = Math.min(active, Math.max(results.length - 1, 0));

  useEffect(() => {
    const el = dialog.current;
    if (el === null) return;
    if (open && !el.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      giveFocusBack.current = true;
      setQuery("");
      setActive(0);
      el.showModal();
      input.current?.focus();
    } else if (!open && el.open) {
      el.close();
    }
  }, [open]);

  // keep the active option in view as the arrows move through a long list
  useEffect(() => {
    if (open) document.getElementById(optionId(current))?.scrollIntoView?.({ block: "nearest" });
  }, [open, current]);

  const closed = () => {
    const back = opener.current;
    opener.current = null;
    if (giveFocusBack.current && back?.isConnected) back.focus();
    onClose();
  };

  const choose = (item: PaletteItem | undefined) => {
    if (item === undefined) return;
    giveFocusBack.current = false;
    onClose();
    onChoose(item);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    const n = results.length;
    if (event.key === "ArrowDown" && n > 0) {
      event.preventDefault();
      setActive((current + 1) % n);
    } else if (event.key === "ArrowUp" && n > 0) {
      event.preventDefault();
      setActive((current - 1 + n) % n);
    } else if (event.key === "Enter") {
      event.preventDefault();
      choose(results[current]);
    } else if (event.key === "Escape") {
      event.preventDefault();
      dialog.current?.close(); // the close event gives focus back
    }
  };

  return (
    <dialog ref={dialog} className="palette" aria-labelledby={`${base}-title`} onClose={closed}>
      {open && (
        <>
          <h2 id={`${base}-title`} className="visually-hidden">
            Jump to
          </h2>
          <input
            ref={input}
            type="text"
            role="combobox"
            aria-expanded="true"
            aria-controls={listId}
            aria-autocomplete="list"
            aria-activedescendant={results.length > 0 ? optionId(current) : undefined}
            aria-label="Jump to a screen, conversation, document, archive, setting or map card"
            placeholder="Jump to a screen, conversation, document, archive, setting or map card"
            autoComplete="off"
            spellCheck={false}
            value={query}
            onChange={(event) => {
              setQuery(event.target.value);
              setActive(0);
            }}
            onKeyDown={onKeyDown}
          />
          <ul id={listId} role="listbox" aria-label="Matches" className="palette-results">
            {results.map((item, i) => (
              <li
                key={item.id}
                id={optionId(i)}
                role="option"
                aria-selected={i === current}
                className={i === current ? "is-active" : undefined}
                data-item={item.id}
                onMouseMove={() => i !== current && setActive(i)}
                onClick={() => choose(item)}
              >
                <span className="palette-title">{item.title}</span>
                {item.detail && <span className="palette-detail">{item.detail}</span>}
                <span className="palette-section">{item.section}</span>
              </li>
            ))}
          </ul>
          <p className="palette-status muted" aria-live="polite">
            {results.length === 0
              ? `Nothing matches \u201c${query}\u201d${loading ? " yet" : "."}`
              : `${results.length} match${results.length === 1 ? "" : "es"} \u00b7 \u2191\u2193 to move, Enter to open, Esc to close`}
            {loading && " \u00b7 still reading the conversations, documents and archives\u2026"}
          </p>
          {notes.map((note) => (
            <p key={note} className="error palette-note">
              {note}
            </p>
          ))}
        </>
      )}
    </dialog>
  );
}
