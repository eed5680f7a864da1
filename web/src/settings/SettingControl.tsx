/** The form control of one setting, chosen by its type: checkbox, select, number or text field. */
import type { SettingField } from "../api/types";
import { controlValue, type Draft } from "./form";

/** The id of a setting's control (its label's `for`, the base of its help and error ids). */
export const fieldId = (name: string) => `setting-${name}`;

export function SettingControl({
  field,
  draft,
  describedBy,
  invalid,
  onChange,
}: {
  field: SettingField;
  draft: Draft;
  describedBy: string;
  invalid: boolean;
  onChange: (raw: string | boolean) => void;
}) {
  const common = {
    id: fieldId(field.name),
    "aria-describedby": describedBy,
    "aria-invalid": invalid || undefined,
    disabled: draft.kind === "reset",
  };
  const raw = draft.kind === "edit" ? draft.raw : controlValue(field, field.environment_value);
  if (field.type === "boolean") {
    return (
      <input
        type="checkbox"
        {...common}
        checked={raw === true}
        onChange={(e) => onChange(e.target.checked)}
      />
    );
  }
  if (field.type === "enum") {
    return (
      <select {...common} value={String(raw)} onChange={(e) => onChange(e.target.value)}>
        {(field.choices ?? []).map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    );
  }
  if (field.type === "integer" || field.type === "number") {
    return (
      <input
        type="number"
        inputMode={field.type === "integer" ? "numeric" : "decimal"}
        step={field.type === "integer" ? 1 : "any"}
        min={field.minimum ?? undefined}
        max={field.maximum ?? undefined}
        {...common}
        value={String(raw)}
        onChange={(e) => onChange(e.target.value)}
      />
    );
  }
  return <input type="text" {...common} value={String(raw)} onChange={(e) => onChange(e.target.value)} />;
}
