/**
 * The settings drawer's form: a draft per runtime-editable setting, checked against
 * the type and bounds `GET /api/settings` describes, diffed against the effective
 * values so a save sends only what changed, and a refused patch's errors mapped back
 * onto the fields they name.
 */
import type { SettingError, SettingField, SettingValue } from "../api/types";

/** What the user has in a field: a value being edited, or "remove the override". */
export type Draft = { kind: "edit"; raw: string | boolean } | { kind: "reset" };

export type Drafts = Record<string, Draft>;

/** The editable fields: those `PATCH /api/settings` accepts. */
export function editableFields(fields: readonly SettingField[]): SettingField[] {
  return fields.filter((f) => f.runtime_editable);
}

/** A value as a form control holds it: checkboxes a boolean, everything else text. */
export function controlValue(field: SettingField, value: SettingValue): string | boolean {
  if (field.type === "boolean") return value === true;
  return value === null ? "" : String(value);
}

/** One untouched draft per editable field. */
export function initialDrafts(fields: readonly SettingField[]): Drafts {
  const drafts: Drafts = {};
  for (const field of editableFields(fields)) {
    drafts[field.name] = { kind: "edit", raw: controlValue(field, field.value) };
  }
  return drafts;
}

/** The allowed range as text ("16 to 20000", "more than 0"), or "" without bounds. */
export function describeBounds(field: SettingField): string {
  const low =
    field.minimum != null
      ? `at least ${field.minimum}`
      : field.exclusive_minimum != null
        ? `more than ${field.exclusive_minimum}`
        : null;
  const high =
    field.maximum != null
      ? `at most ${field.maximum}`
      : field.exclusive_maximum != null
        ? `less than ${field.exclusive_maximum}`
        : null;
  if (field.minimum != null && field.maximum != null) return `${field.minimum} to ${field.maximum}`;
  return [low, high].filter(Boolean).join(", ");
}

export type Parsed = { ok: true; value: SettingValue } | { ok: false; error: string };

/** The typed value of a field's draft text, or why it is not valid for the field. */
export function parseDraft(field: SettingField, raw: string | boolean): Parsed {
  if (field.type === "boolean") {
    return typeof raw === "boolean"
      ? { ok: true, value: raw }
      : { ok: false, error: "Tick or untick the box." };
  }
  const text = String(raw).trim();
  if (text === "") {
    return { ok: false, error: field.nullable ? "Use \u201cReset\u201d to clear it." : "Enter a value." };
  }
  if (field.type === "enum") {
    const choices = field.choices ?? [];
    return choices.includes(text)
      ? { ok: true, value: text }
      : { ok: false, error: `Choose one of ${choices.join(", ")}.` };
  }
  if (field.type !== "integer" && field.type !== "number") return { ok: true, value: text };
  const value = Number(text);
  if (field.type === "integer" && !/^[+-]?\d+$/.test(text)) {
    return { ok: false, error: "Enter a whole number." };
  }
  if (!Number.isFinite(value)) return { ok: false, error: "Enter a number." };
  const outside =
    (field.minimum != null && value < field.minimum) ||
    (field.exclusive_minimum != null && value <= field.exclusive_minimum) ||
    (field.maximum != null && value > field.maximum) ||
    (field.exclusive_maximum != null && value >= field.exclusive_maximum);
  if (outside) return { ok: false, error: `Must be ${describeBounds(field)}.` };
  return { ok: true, value };
}

/** What a save would send, or the fields whose drafts do not parse. */
export interface Diff {
  /** Setting name -> new value, or null to remove its override. */
  values: Record<string, SettingValue>;
  /** Setting name -> why its draft is invalid. */
  errors: Record<string, string>;
}

/**
 * The patch for `drafts`: a changed value for each draft that differs from the
 * effective value, `null` for a reset of an overridden field; invalid drafts go to
 * `errors` instead.
 */
export function diffDrafts(fields: readonly SettingField[], drafts: Drafts): Diff {
  const values: Record<string, SettingValue> = {};
  const errors: Record<string, string> = {};
  for (const field of editableFields(fields)) {
    const draft = drafts[field.name];
    if (draft === undefined) continue;
    if (draft.kind === "reset") {
      if (field.overridden) values[field.name] = null;
      continue;
    }
    const parsed = parseDraft(field, draft.raw);
    if (!parsed.ok) errors[field.name] = parsed.error;
    else if (parsed.value !== field.value) values[field.name] = parsed.value;
  }
  return { values, errors };
}

/** A refused patch's errors: by the setting each names, and those naming none. */
export interface MappedErrors {
  byField: Record<string, string[]>;
  general: string[];
}

/**
 * The 422 body's `errors` spread over the form: each message under the setting it
 * names when the form shows that setting, the rest (a rule naming no setting, or one
 * the form does not show) as general errors, prefixed with the setting's name.
 */
export function mapPatchErrors(errors: readonly SettingError[], shown: ReadonlySet<string>): MappedErrors {
  const byField: Record<string, string[]> = {};
  const general: string[] = [];
  for (const error of errors) {
    if (error.field !== null && shown.has(error.field)) {
      (byField[error.field] ??= []).push(error.message);
    } else {
      general.push(error.field ? `${error.field}: ${error.message}` : error.message);
    }
  }
  return { byField, general };
}

/** The `errors` list of a refused settings patch, if `body` is one. */
export function patchErrorsOf(body: unknown): SettingError[] | null {
  if (typeof body !== "object" || body === null || !("errors" in body)) return null;
  const errors = (body as { errors: unknown }).errors;
  if (!Array.isArray(errors)) return null;
  return errors.filter(
    (e): e is SettingError =>
      typeof e === "object" && e !== null && typeof (e as SettingError).message === "string",
  );
}

/** A value for display: booleans as on/off, empty as "(none)", secrets as given. */
export function showValue(value: SettingValue): string {
  if (value === null || value === "") return "(none)";
  if (typeof value === "boolean") return value ? "on" : "off";
  return String(value);
}

const ACRONYMS: Record<string, string> = {
  LLM: "LLM",
  OCR: "OCR",
  DPI: "DPI",
  BM25: "BM25",
  URL: "URL",
  API: "API",
  HYDE: "HyDE",
};

/** A setting's name as a label: `LLM_MAX_TOKENS` -> "LLM max tokens". */
export function settingLabel(name: string): string {
  return name
    .split("_")
    .filter(Boolean)
    .map((word, i) => {
      const acronym = ACRONYMS[word];
      if (acronym) return acronym;
      const lower = word.toLowerCase();
      return i === 0 ? lower.charAt(0).toUpperCase() + lower.slice(1) : lower;
    })
    .join(" ");
}
