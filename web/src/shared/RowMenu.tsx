/** The "⋯" actions menu of a sidebar row: a `<details>` that Escape closes. */
import type { KeyboardEvent, ReactNode, SyntheticEvent } from "react";

/** Closes the `<details>` menu an event came from, focusing its summary. */
export function closeMenu(event: SyntheticEvent<HTMLElement>, focusSummary = false) {
  const menu = event.currentTarget.closest("details");
  if (menu === null) return;
  menu.open = false;
  if (focusSummary) menu.querySelector("summary")?.focus();
}

function onMenuKey(event: KeyboardEvent<HTMLDetailsElement>) {
  if (event.key === "Escape" && event.currentTarget.open) {
    event.stopPropagation();
    closeMenu(event, true);
  }
}

/** A row's actions menu, labelled for screen readers. */
export function RowMenu({ label, children }: { label: string; children: ReactNode }) {
  return (
    <details className="row-menu" onKeyDown={onMenuKey}>
      <summary aria-label={label}>
        <span aria-hidden="true">{"\u22ef"}</span>
      </summary>
      <div className="menu">{children}</div>
    </details>
  );
}
