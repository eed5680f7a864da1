/**
 * The settings drawer: every runtime-editable setting as a form control built from
 * the metadata `GET /api/settings` gives (type, choices, bounds, description), the
 * others read-only. Saving sends only what changed; a refused patch's errors appear
 * next to the settings they name.
 */
import { useEffect, useRef, useState, type FormEvent } from "react";

import { ApiError, describeError } from "../api/client";
import { patchSettings } from "../api/resources";
import type { SettingField, SettingsResponse } from "../api/types";
import {
  controlValue,
  describeBounds,
  diffDrafts,
  editableFields,
  initialDrafts,
  mapPatchErrors,
  patchErrorsOf,
  settingLabel,
  showValue,
  type Draft,
  type Drafts,
} from "../settings/form";
import { Modal } from "./Modal";

interface SettingsDrawerProps {
  open: boolean;
  onClose: () => void;
  settings: SettingsResponse | null;
  loadError: string | null;
  onSaved: (settings: SettingsResponse) => void;
}

const fieldId = (name: string) => `setting-${name}`;

function Control({
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

function FieldRow({
  field,
  draft,
  errors,
  onChange,
}: {
  field: SettingField;
  draft: Draft;
  errors: string[];
  onChange: (draft: Draft) => void;
}) {
  const id = fieldId(field.name);
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  const label = settingLabel(field.name);
  const bounds = describeBounds(field);
  const control = (
    <Control
      field={field}
      draft={draft}
      describedBy={errors.length > 0 ? `${errorId} ${helpId}` : helpId}
      invalid={errors.length > 0}
      onChange={(raw) => onChange({ kind: "edit", raw })}
    />
  );
  return (
    <div className={`setting${errors.length > 0 ? " has-error" : ""}`} data-setting={field.name}>
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
      {field.overridden &&
        (draft.kind === "reset" ? (
          <button
            type="button"
            className="link-button"
            onClick={() => onChange({ kind: "edit", raw: controlValue(field, field.value) })}
          >
            Keep the override
            <span className="visually-hidden"> of {label}</span>
          </button>
        ) : (
          <button type="button" className="link-button" onClick={() => onChange({ kind: "reset" })}>
            Reset to default
            <span className="visually-hidden"> ({label})</span>
          </button>
        ))}
    </div>
  );
}

function SettingsForm({
  settings,
  onSaved,
}: {
  settings: SettingsResponse;
  onSaved: (settings: SettingsResponse) => void;
}) {
  const fields = settings.settings;
  const editable = editableFields(fields);
  const [drafts, setDrafts] = useState<Drafts>(() => initialDrafts(fields));
  const [fieldErrors, setFieldErrors] = useState<Record<string, string[]>>({});
  const [general, setGeneral] = useState<string[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const diff = diffDrafts(fields, drafts);
  const changes = Object.keys(diff.values).length;

  // after a refused save, take the user to the first setting at fault
  const [focusToken, setFocusToken] = useState(0);
  useEffect(() => {
    if (focusToken === 0) return;
    form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [focusToken]);

  const change = (name: string, draft: Draft) => {
    setDrafts((prev) => ({ ...prev, [name]: draft }));
    setFieldErrors((prev) => {
      const next = { ...prev };
      delete next[name];
      return next;
    });
    setNotice(null);
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setGeneral([]);
    setNotice(null);
    if (Object.keys(diff.errors).length > 0) {
      setFieldErrors(Object.fromEntries(Object.entries(diff.errors).map(([name, error]) => [name, [error]])));
      setFocusToken((t) => t + 1);
      return;
    }
    if (changes === 0) {
      setNotice("Nothing to save: no setting differs from its current value.");
      return;
    }
    setSaving(true);
    try {
      const response = await patchSettings(diff.values);
      onSaved(response);
      setDrafts(initialDrafts(response.settings));
      setFieldErrors({});
      setNotice(
        response.changed.length > 0
          ? `Saved. Changed: ${response.changed.join(", ")}.`
          : "Saved; no effective value changed.",
      );
    } catch (exc) {
      const errors = exc instanceof ApiError ? patchErrorsOf(exc.body) : null;
      if (errors !== null && errors.length > 0) {
        const mapped = mapPatchErrors(errors, new Set(editable.map((f) => f.name)));
        setFieldErrors(mapped.byField);
        setGeneral(mapped.general);
        setFocusToken((t) => t + 1);
      } else {
        setGeneral([`Saving failed: ${describeError(exc)}`]);
      }
    } finally {
      setSaving(false);
    }
  };

  const readOnly = fields.filter((f) => !f.runtime_editable);
  const errorCount = Object.keys(fieldErrors).length;
  return (
    <form ref={form} className="settings-form" noValidate onSubmit={save}>
      {settings.stale && (
        <p className="notice notice-warn">
          The indexed corpus was built with other chunking, contextualization or OCR settings. Re-ingest it
          from the banner to apply them.
        </p>
      )}
      {settings.skipped_overrides.length > 0 && (
        <div className="notice notice-warn">
          <p>Stored overrides not in effect (they no longer validate):</p>
          <ul>
            {settings.skipped_overrides.map((s) => (
              <li key={s.name}>
                <code>{s.name}</code>={s.value}: {s.reason}
              </li>
            ))}
          </ul>
        </div>
      )}
      <p className="hint">
        Changes apply at once to every process. Settings marked{" "}
        <span className="tag tag-reingest">re-ingest</span> change how files are indexed: the corpus needs a
        re-ingest afterwards.
      </p>
      <div className="settings-fields">
        {editable.map((field) => (
          <FieldRow
            key={field.name}
            field={field}
            draft={drafts[field.name] ?? { kind: "edit", raw: controlValue(field, field.value) }}
            errors={fieldErrors[field.name] ?? []}
            onChange={(draft) => change(field.name, draft)}
          />
        ))}
      </div>
      <details className="read-only-settings">
        <summary>Settings that need a restart ({readOnly.length})</summary>
        <p className="hint">
          These decide which stores, model servers and folders a process uses. Set them in the environment or{" "}
          <code>.env</code> and restart.
        </p>
        <dl>
          {readOnly.map((field) => (
            <div key={field.name}>
              <dt>
                <code>{field.name}</code> <span className="tag">needs a restart</span>
              </dt>
              <dd>{showValue(field.value)}</dd>
            </div>
          ))}
        </dl>
      </details>
      <div className="drawer-footer">
        <div aria-live="polite" className="save-status">
          {errorCount > 0 && (
            <p className="field-error">
              {errorCount === 1 ? "1 setting needs" : `${errorCount} settings need`} a fix; nothing was saved.
            </p>
          )}
          {general.map((message) => (
            <p key={message} className="field-error">
              {message}
            </p>
          ))}
          {notice && <p className="saved">{notice}</p>}
        </div>
        <button type="submit" className="primary" disabled={saving}>
          {saving
            ? "Saving\u2026"
            : changes > 0
              ? `Save ${changes} change${changes === 1 ? "" : "s"}`
              : "Save"}
        </button>
      </div>
    </form>
  );
}

export function SettingsDrawer({ open, onClose, settings, loadError, onSaved }: SettingsDrawerProps) {
  return (
    <Modal open={open} onClose={onClose} labelledBy="settings-heading" className="drawer">
      <div className="drawer-head">
        <h2 id="settings-heading">Settings</h2>
        <button type="button" onClick={onClose} data-autofocus>
          Close<span className="visually-hidden"> settings</span>
        </button>
      </div>
      {settings === null ? (
        <p className={loadError ? "error" : "muted"} role={loadError ? "alert" : undefined}>
          {loadError ?? "Reading the settings\u2026"}
        </p>
      ) : (
        <SettingsForm settings={settings} onSaved={onSaved} />
      )}
    </Modal>
  );
}
