/**
 * One editable setting: its label and tags, its control, the errors a check or a
 * refused save found, its help (name, description, bounds, what the override hides)
 * and "Reset to default" / "Keep the override".
 */
import type { SettingField } from "../api/types";
import { controlValue, describeBounds, settingLabel, showValue, type Draft } from "./form";
import { fieldId, SettingControl } from "./SettingControl";

/** Resetting an override, or taking the reset back. */
function OverrideButton({
  field,
  draft,
  label,
  onChange,
}: {
  field: SettingField;
  draft: Draft;
  label: string;
  onChange: (draft: Draft) => void;
}) {
  if (draft.kind === "reset") {
    return (
      <button
        type="button"
        className="link-button"
        onClick={() => onChange({ kind: "edit", raw: controlValue(field, field.value) })}
      >
        Keep the override
        <span className="visually-hidden"> of {label}</span>
      </button>
    );
  }
  return (
    <button type="button" className="link-button" onClick={() => onChange({ kind: "reset" })}>
      Reset to default
      <span className="visually-hidden"> ({label})</span>
    </button>
  );
}

export function SettingRow({
  field,
  draft,
  errors,
  onChange,
  spotlit = false,
}: {
  field: SettingField;
  draft: Draft;
  errors: string[];
  onChange: (draft: Draft) => void;
  /** The palette opened the drawer at this setting. */
  spotlit?: boolean;
}) {
  const id = fieldId(field.name);
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  const label = settingLabel(field.name);
  const bounds = describeBounds(field);
  const control = (
    <SettingControl
      field={field}
      draft={draft}
      describedBy={errors.length > 0 ? `${errorId} ${helpId}` : helpId}
      invalid={errors.length > 0}
      onChange={(raw) => onChange({ kind: "edit", raw })}
    />
  );
  return (
    <div
      className={`setting${errors.length > 0 ? " has-error" : ""}${spotlit ? " is-spotlit" : ""}`}
      data-setting={field.name}
    >
      <div className="setting-head">
        {field.type === "boolean" ? (
          <span className="checkbox-label">
            {control}
            <label htmlFor={id}>{label}</label>
          </span>
        ) : (
          <label htmlFor={id}>{label}</label>
        )}
        {field.reingest_affecting && (
          <span
            className="tag tag-reingest"
            title="Changing it makes the indexed chunks out of date until a re-ingest"
          >
            re-ingest
          </span>
        )}
        {field.overridden && <span className="tag">overridden</span>}
      </div>
      {field.type !== "boolean" && control}
      {errors.length > 0 && (
        <ul id={errorId} className="field-error">
          {errors.map((error) => (
            <li key={error}>{error}</li>
          ))}
        </ul>
      )}
      <p id={helpId} className="hint">
        <code>{field.name}</code>
        {field.description ? ` \u2014 ${field.description}` : ""}
        {bounds ? ` (${bounds})` : ""}
        {draft.kind === "reset"
          ? ` Saving removes the override: back to ${showValue(field.environment_value)}.`
          : field.overridden
            ? ` Without the override: ${showValue(field.environment_value)}.`
            : ""}
      </p>
      {field.overridden && <OverrideButton field={field} draft={draft} label={label} onChange={onChange} />}
    </div>
  );
}
