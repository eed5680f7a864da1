/**
 * The settings drawer: every runtime-editable setting as a form control built from
 * the metadata `GET /api/settings` gives (type, choices, bounds, description), the
 * others read-only. Saving sends only what changed; a refused patch's errors appear
 * next to the settings they name. The form is `SettingsForm`; one setting a
 * `SettingRow` (its control a `SettingControl`); the footer the `SaveBar`.
 */
import type { SettingsResponse } from "../api/types";
import { Modal } from "../shared/Modal";
import { SettingsForm } from "./SettingsForm";

interface SettingsDrawerProps {
  open: boolean;
  onClose: () => void;
  settings: SettingsResponse | null;
  loadError: string | null;
  onSaved: (settings: SettingsResponse) => void;
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
