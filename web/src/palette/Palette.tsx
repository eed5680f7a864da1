/**
 * The palette as the app mounts it: ⌘K or Ctrl-K anywhere opens it (or closes it), its
 * items are read when it opens, and a chosen item is carried out with the app's actions
 * (navigate, open the settings at one, switch developer mode).
 */
import { useEffect, useRef } from "react";

import type { SettingsResponse } from "../api/types";
import { CommandPalette } from "./CommandPalette";
import { runTarget, type PaletteActions } from "./palette";
import { usePaletteItems } from "./usePaletteItems";

/** Whether a key press is ⌘K (macOS) or Ctrl-K (elsewhere). */
export function isPaletteShortcut(
  event: Pick<KeyboardEvent, "key" | "metaKey" | "ctrlKey" | "altKey" | "shiftKey">,
) {
  return (
    event.key.toLowerCase() === "k" && (event.metaKey || event.ctrlKey) && !event.altKey && !event.shiftKey
  );
}

interface PaletteProps extends PaletteActions {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  developerMode: boolean;
  settings: SettingsResponse | null;
  /** The message graph is switched on: its archives are listed. */
  graphEnabled: boolean;
}

export function Palette({
  open,
  onOpenChange,
  developerMode,
  settings,
  graphEnabled,
  navigate,
  openSettings,
  setDeveloperMode,
}: PaletteProps) {
  const { items, notes, loading } = usePaletteItems(open, developerMode, settings, graphEnabled);
  const toggle = useRef(() => onOpenChange(!open));
  useEffect(() => {
    toggle.current = () => onOpenChange(!open);
  }, [open, onOpenChange]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (!isPaletteShortcut(event) || event.repeat) return;
      event.preventDefault(); // the browser's own Ctrl-K (its search bar)
      toggle.current();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  return (
    <CommandPalette
      open={open}
      onClose={() => onOpenChange(false)}
      items={items}
      notes={notes}
      loading={loading}
      onChoose={(item) => runTarget(item.target, { navigate, openSettings, setDeveloperMode })}
    />
  );
}
