/** Test helper: a setting as `GET /api/settings` describes it, with defaults for the rest. */
import type { SettingField } from "../api/types";

export function settingField(name: string, overrides: Partial<SettingField>): SettingField {
  return {
    name,
    value: null,
    environment_value: null,
    default: null,
    overridden: false,
    runtime_editable: true,
    reingest_affecting: false,
    secret: false,
    type: "string",
    nullable: false,
    description: null,
    ...overrides,
  };
}
