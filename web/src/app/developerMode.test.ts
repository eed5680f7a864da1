import { describe, expect, it } from "vitest";

import { DEVELOPER_MODE_STORAGE, storeDeveloperMode, storedDeveloperMode } from "./developerMode";

/** A Storage kept in a Map (the tests run in Node, which has none). */
function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (key) => items.get(key) ?? null,
    key: (i) => [...items.keys()][i] ?? null,
    removeItem: (key) => void items.delete(key),
    setItem: (key, value) => void items.set(key, String(value)),
  };
}

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
