/**
 * Developer mode: the codebase map in the header and in the ⌘K palette (the map's
 * route works by URL regardless; the gate is cosmetic in a single-user local app), and
 * in the evidence panel how each answer was built (trace table, stage timings, and the
 * prompt and raw output, which chat requests then ask the server for).
 * On by default; the choice is kept in this browser's `localStorage`.
 */
import { useCallback, useState } from "react";

/** Where the choice is kept: "off" turns it off, anything else (or nothing) leaves it on. */
export const DEVELOPER_MODE_STORAGE = "varagity.developerMode";

function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null; // storage blocked by the browser's privacy settings
  }
}

export function storedDeveloperMode(store: Storage | null = storage()): boolean {
  return store?.getItem(DEVELOPER_MODE_STORAGE) !== "off";
}

export function storeDeveloperMode(on: boolean, store: Storage | null = storage()): void {
  try {
    store?.setItem(DEVELOPER_MODE_STORAGE, on ? "on" : "off");
  } catch {
    // a full or blocked storage: the choice lasts this page only
  }
}

export interface DeveloperMode {
  on: boolean;
  set: (on: boolean) => void;
}

export function useDeveloperMode(): DeveloperMode {
  const [on, setOn] = useState(() => storedDeveloperMode());
  const set = useCallback((next: boolean) => {
    storeDeveloperMode(next);
    setOn(next);
  }, []);
  return { on, set };
}
