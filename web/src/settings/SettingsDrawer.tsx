/**
 * The settings drawer: every runtime-editable setting as a form control built from
 * the metadata `GET /api/settings` gives (type, choices, bounds, description), the
 * others read-only. Saving sends only what changed; a refused patch's errors appear
 * next to the settings they name. The form is `SettingsForm`; one setting a
 * `SettingRow` (its control a `SettingControl`); the footer the `SaveBar`. Above the
 * form, what this browser keeps: developer mode. Opened at one setting (the ⌘K
 * palette), the drawer shows it and focuses its control.
 */
import { useEffect } from "react";

import type { SettingsResponse } from "../api/types";
import { Modal } from "../shared/Modal";
import { fieldId } from "./SettingControl";
import { SettingsForm } from "./SettingsForm";

interface SettingsDrawerProps {
  open: boolean;
  onClose: () => void;
  settings: SettingsResponse | null;
  loadError: string | null;
  onSaved: (settings: SettingsResponse) => void;
  /** The setting to show and focus, or null. */
  focusSetting?: string | null;
  /** Developer mode, kept in this browser (absent: no toggle). */
  developerMode?: { on: boolean; set: (on: boolean) => void };
}

/** Scroll to a setting's row and focus its control (a restart-only one: the row). */
function revealSetting(name: string): void {
  const row = document.querySelector<HTMLElement>(`.drawer [data-setting="${name}"]`);
  if (row === null) return;
  row.scrollIntoView?.({ block: "center" });
  (document.getElementById(fieldId(name)) ?? row).focus();
}

export function SettingsDrawer({
  open,
  onClose,
  settings,
  loadError,
  onSaved,
  focusSetting = null,
  developerMode,
}: SettingsDrawerProps) {
  // after the dialog's own effect (it focuses Close first): a child's effects run before
  // its parent's, so this one runs last
  useEffect(() => {
    if (open && settings !== null && focusSetting !== null) revealSetting(focusSetting);
  }, [open, settings !== null, focusSetting]);

  return (
    <Modal open={open} onClose={onClose} labelledBy="settings-heading" className="drawer">
      <div className="drawer-head">
        <h2 id="settings-heading">Settings</h2>
        <button type="button" onClick={onClose} data-autofocus>
          Close<span className="visually-hidden"> settings</span>
        </button>
      </div>
      {developerMode && (
        <fieldset className="browser-settings">
          <legend>In this browser</legend>
          <label className="checkbox-label">
            <input
              type="checkbox"
              id="developer-mode"
              checked={developerMode.on}
              onChange={(event) => developerMode.set(event.target.checked)}
            />
            Developer mode
          </label>
          <p className="hint">
            Shows the codebase map in the header and the {"\u2318"}K palette (it opens by its address,{" "}
            <code>#/map</code>, either way), and in each answer's evidence how it was built: the retrieval
            trace, stage timings, the prompt and the model's raw output.
          </p>
        </fieldset>
      )}
      {settings === null ? (
        <p className={loadError ? "error" : "muted"} role={loadError ? "alert" : undefined}>
          {loadError ?? "Reading the settings\u2026"}
        </p>
      ) : (
        <SettingsForm settings={settings} onSaved={onSaved} spotlit={focusSetting} />
      )}
    </Modal>
  );
}
