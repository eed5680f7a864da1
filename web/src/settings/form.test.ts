import { describe, expect, it } from "vitest";

import {
  describeBounds,
  diffDrafts,
  initialDrafts,
  mapPatchErrors,
  parseDraft,
  patchErrorsOf,
  settingLabel,
} from "./form";
import { settingField } from "./testing";

const CHUNK_SIZE = settingField("CHUNK_SIZE", {
  type: "integer",
  value: 800,
  environment_value: 800,
  default: 800,
  minimum: 16,
  maximum: 20000,
  reingest_affecting: true,
});
const TEMPERATURE = settingField("LLM_TEMPERATURE", { type: "number", value: 0, minimum: 0, maximum: 2 });
const PERCENTILE = settingField("SEMANTIC_BREAKPOINT_PERCENTILE", {
  type: "number",
  value: 90,
  exclusive_minimum: 0,
  exclusive_maximum: 100,
});
const METHOD = settingField("RETRIEVAL_METHOD", {
  type: "enum",
  value: "bm25",
  environment_value: "hybrid",
  overridden: true,
  choices: ["semantic", "bm25", "hybrid"],
});
const CONTEXTUALIZE = settingField("CONTEXTUALIZE", { type: "boolean", value: false });
const PORT = settingField("API_PORT", { type: "integer", value: 8000, runtime_editable: false });
const FIELDS = [CHUNK_SIZE, TEMPERATURE, PERCENTILE, METHOD, CONTEXTUALIZE, PORT];

describe("parseDraft", () => {
  it("checks integers, numbers and their inclusive and exclusive bounds", () => {
    expect(parseDraft(CHUNK_SIZE, "600")).toEqual({ ok: true, value: 600 });
    expect(parseDraft(CHUNK_SIZE, "60.5")).toEqual({ ok: false, error: "Enter a whole number." });
    expect(parseDraft(CHUNK_SIZE, "8")).toEqual({ ok: false, error: "Must be 16 to 20000." });
    expect(parseDraft(CHUNK_SIZE, " ")).toEqual({ ok: false, error: "Enter a value." });
    expect(parseDraft(TEMPERATURE, "0.7")).toEqual({ ok: true, value: 0.7 });
    expect(parseDraft(TEMPERATURE, "warm")).toEqual({ ok: false, error: "Enter a number." });
    expect(parseDraft(PERCENTILE, "100")).toEqual({
      ok: false,
      error: "Must be more than 0, less than 100.",
    });
    expect(parseDraft(PERCENTILE, "99.5")).toEqual({ ok: true, value: 99.5 });
  });

  it("keeps enum values to their choices and booleans as booleans", () => {
    expect(parseDraft(METHOD, "hybrid")).toEqual({ ok: true, value: "hybrid" });
    expect(parseDraft(METHOD, "magic")).toEqual({
      ok: false,
      error: "Choose one of semantic, bm25, hybrid.",
    });
    expect(parseDraft(CONTEXTUALIZE, true)).toEqual({ ok: true, value: true });
  });
});

describe("diffDrafts", () => {
  it("sends nothing for untouched drafts, and never the restart-only settings", () => {
    const drafts = initialDrafts(FIELDS);
    expect(Object.keys(drafts)).not.toContain("API_PORT");
    expect(diffDrafts(FIELDS, drafts)).toEqual({ values: {}, errors: {} });
  });

  it("sends only the changed values, typed, and null for a reset override", () => {
    const drafts = {
      ...initialDrafts(FIELDS),
      CHUNK_SIZE: { kind: "edit" as const, raw: "600" },
      LLM_TEMPERATURE: { kind: "edit" as const, raw: "0" }, // typed again, same value
      CONTEXTUALIZE: { kind: "edit" as const, raw: true },
      RETRIEVAL_METHOD: { kind: "reset" as const },
    };
    expect(diffDrafts(FIELDS, drafts)).toEqual({
      values: { CHUNK_SIZE: 600, CONTEXTUALIZE: true, RETRIEVAL_METHOD: null },
      errors: {},
    });
  });

  it("reports invalid drafts instead of sending them, and ignores resets of defaults", () => {
    const drafts = {
      ...initialDrafts(FIELDS),
      CHUNK_SIZE: { kind: "edit" as const, raw: "abc" },
      LLM_TEMPERATURE: { kind: "reset" as const }, // not overridden: nothing to remove
    };
    expect(diffDrafts(FIELDS, drafts)).toEqual({
      values: {},
      errors: { CHUNK_SIZE: "Enter a whole number." },
    });
  });
});

describe("refused patches", () => {
  const body = {
    code: "invalid_settings",
    message: "Settings not changed: ...",
    errors: [
      { field: "CHUNK_OVERLAP", code: "invalid_combination", message: "CHUNK_OVERLAP (900) must be smaller" },
      { field: "CHUNK_SIZE", code: "invalid_combination", message: "CHUNK_OVERLAP (900) must be smaller" },
      { field: "API_PORT", code: "not_runtime_editable", message: "needs a restart" },
      { field: null, code: "invalid_combination", message: "a rule naming no setting" },
    ],
  };

  it("maps each error onto the field it names, the rest to the form", () => {
    const errors = patchErrorsOf(body);
    expect(errors).toHaveLength(4);
    const mapped = mapPatchErrors(errors!, new Set(["CHUNK_SIZE", "CHUNK_OVERLAP"]));
    expect(mapped.byField).toEqual({
      CHUNK_OVERLAP: ["CHUNK_OVERLAP (900) must be smaller"],
      CHUNK_SIZE: ["CHUNK_OVERLAP (900) must be smaller"],
    });
    expect(mapped.general).toEqual(["API_PORT: needs a restart", "a rule naming no setting"]);
  });

  it("finds no errors list in other error bodies", () => {
    expect(patchErrorsOf({ code: "stores_unavailable", message: "down" })).toBeNull();
    expect(patchErrorsOf(null)).toBeNull();
  });
});

describe("labels", () => {
  it("reads setting names as words, keeping acronyms", () => {
    expect(settingLabel("LLM_MAX_TOKENS")).toBe("LLM max tokens");
    expect(settingLabel("HYDE_BASE_METHOD")).toBe("HyDE base method");
    expect(settingLabel("TOP_K")).toBe("Top k");
    expect(describeBounds(CHUNK_SIZE)).toBe("16 to 20000");
    expect(describeBounds(METHOD)).toBe("");
  });
});
