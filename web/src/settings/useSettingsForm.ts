/**
 * The settings form's state: a draft per editable setting, the errors found by the
 * check before saving or named by a refused patch, and the save itself (only what
 * changed). After a refused save, focus moves to the first setting at fault.
 */
import { useEffect, useRef, useState, type FormEvent, type RefObject } from "react";

import { ApiError, describeError } from "../api/client";
import { patchSettings } from "../api/resources";
import type { SettingField, SettingsResponse } from "../api/types";
import {
  diffDrafts,
  editableFields,
  initialDrafts,
  mapPatchErrors,
  patchErrorsOf,
  type Draft,
  type Drafts,
} from "./form";

export interface SettingsFormState {
  /** The form element (focus goes to its first invalid control after a refused save). */
  form: RefObject<HTMLFormElement | null>;
  editable: SettingField[];
  drafts: Drafts;
  /** Errors next to a setting, by setting name. */
  fieldErrors: Record<string, string[]>;
  /** Errors no setting is named in. */
  general: string[];
  notice: string | null;
  saving: boolean;
  /** How many settings differ from their current value. */
  changes: number;
  change: (name: string, draft: Draft) => void;
  save: (event: FormEvent) => Promise<void>;
}

export function useSettingsForm(
  settings: SettingsResponse,
  onSaved: (settings: SettingsResponse) => void,
): SettingsFormState {
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

  return { form, editable, drafts, fieldErrors, general, notice, saving, changes, change, save };
}
