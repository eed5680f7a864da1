/** The settings a running process cannot change, with their values: "Settings that need a restart". */
import type { SettingField } from "../api/types";
import { showValue } from "./form";

export function ReadOnlySettings({
  fields,
  spotlit = null,
}: {
  fields: SettingField[];
  spotlit?: string | null;
}) {
  const open = spotlit !== null && fields.some((f) => f.name === spotlit);
  return (
    <details className="read-only-settings" open={open || undefined}>
      <summary>Settings that need a restart ({fields.length})</summary>
      <p className="hint">
        These decide which stores, model servers and folders a process uses. Set them in the environment or{" "}
        <code>.env</code> and restart.
      </p>
      <dl>
        {fields.map((field) => (
          <div
            key={field.name}
            data-setting={field.name}
            tabIndex={-1}
            className={field.name === spotlit ? "is-spotlit" : undefined}
          >
            <dt>
              <code>{field.name}</code> <span className="tag">needs a restart</span>
            </dt>
            <dd>{showValue(field.value)}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
