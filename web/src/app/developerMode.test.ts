import { describe, expect, it } from "vitest";

import { memoryStorage } from "../test/fixtures";

import { DEVELOPER_MODE_STORAGE, storeDeveloperMode, storedDeveloperMode } from "./developerMode";

describe("developer mode", () => {
  it("is on by default, and without storage", () => {
    expect(storedDeveloperMode(memoryStorage())).toBe(true);
    expect(storedDeveloperMode(null)).toBe(true);
  });

  it("keeps the choice", () => {
    const store = memoryStorage();
    storeDeveloperMode(false, store);
    expect(store.getItem(DEVELOPER_MODE_STORAGE)).toBe("off");
    expect(storedDeveloperMode(store)).toBe(false);
    storeDeveloperMode(true, store);
    expect(storedDeveloperMode(store)).toBe(true);
  });
});
