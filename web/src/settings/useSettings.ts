/** The settings as `GET /api/settings` reports them, with the corpus stale flag. */
import { useCallback, useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { getSettings } from "../api/resources";
import type { SettingsResponse } from "../api/types";

export interface SettingsController {
  settings: SettingsResponse | null;
  error: string | null;
  /** Read them again (after a reingest, the stale flag may have cleared). */
  reload: () => void;
  /** Take the settings a successful patch answered with. */
  replace: (settings: SettingsResponse) => void;
}

export function useSettings(): SettingsController {
  const [settings, setSettings] = useState<SettingsResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef(0);

  const reload = useCallback(() => {
    const request = ++latest.current;
    getSettings().then(
      (body) => {
        if (request !== latest.current) return;
        setSettings(body);
        setError(null);
      },
      (exc: unknown) => {
        if (request === latest.current) setError(`Cannot read the settings: ${describeError(exc)}`);
      },
    );
  }, []);

  const replace = useCallback((body: SettingsResponse) => {
    latest.current++; // an older read in flight must not overwrite this
    setSettings(body);
    setError(null);
  }, []);

  useEffect(reload, [reload]);
  return { settings, error, reload, replace };
}
