/**
 * The settings form: notices about the corpus and stored overrides, a `SettingRow` per
 * runtime-editable setting, the read-only ones, and the `SaveBar`. Its state and the
 * save live in `useSettingsForm`.
 */
import type { SettingsResponse } from "../api/types";
import { controlValue } from "./form";
import { ReadOnlySettings } from "./ReadOnlySettings";
import { SaveBar } from "./SaveBar";
import { SettingRow } from "./SettingRow";
import { useSettingsForm } from "./useSettingsForm";

/** Why saved settings may not be what the corpus was built with, or not in effect. */
function SettingsNotices({ settings }: { settings: SettingsResponse }) {
  return (
    <>
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
    </>
  );
}

export function SettingsForm({
  settings,
  onSaved,
  spotlit = null,
}: {
  settings: SettingsResponse;
  onSaved: (settings: SettingsResponse) => void;
  /** The setting the palette opened the drawer at. */
  spotlit?: string | null;
}) {
  const { form, editable, drafts, fieldErrors, general, notice, saving, changes, change, save } =
    useSettingsForm(settings, onSaved);
  return (
    <form ref={form} className="settings-form" noValidate onSubmit={save}>
      <SettingsNotices settings={settings} />
      <p className="hint">
        Changes apply at once to every process. Settings marked{" "}
        <span className="tag tag-reingest">re-ingest</span> change how files are indexed: the corpus needs a
        re-ingest afterwards.
      </p>
      <div className="settings-fields">
        {editable.map((field) => (
          <SettingRow
            key={field.name}
            field={field}
            draft={drafts[field.name] ?? { kind: "edit", raw: controlValue(field, field.value) }}
            errors={fieldErrors[field.name] ?? []}
            onChange={(draft) => change(field.name, draft)}
            spotlit={field.name === spotlit}
          />
        ))}
      </div>
      <ReadOnlySettings fields={settings.settings.filter((f) => !f.runtime_editable)} spotlit={spotlit} />
      <SaveBar
        errorCount={Object.keys(fieldErrors).length}
        general={general}
        notice={notice}
        saving={saving}
        changes={changes}
      />
    </form>
  );
}
