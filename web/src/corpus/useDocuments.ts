/** The corpus listing, re-read while the sensors still have work to do. */
import { useCallback, useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { listDocuments } from "../api/resources";
import type { DocumentList } from "../api/types";
import { stillWorking } from "./tree";

/** How often the list is re-read while a file is pending, outdated, missing or being contextualized. */
const POLL_MS = 2000;
/** Polling stops when nothing changed for this long (a file the sensor will not take). */
const POLL_PATIENCE_MS = 90_000;

export interface DocumentsController {
  list: DocumentList | null;
  error: string | null;
  /** The list is being re-read until the sensor catches up. */
  watching: boolean;
  refresh: () => void;
}

function signature(list: DocumentList): string {
  return list.documents
    .map((d) => `${d.relative_path}\u0000${d.status}\u0000${d.n_chunks}\u0000${d.n_contextualized}`)
    .join("\n");
}

/** `version` changes (an upload, a delete, a finished job) re-read the list at once. */
export function useDocuments(version: number): DocumentsController {
  const [list, setList] = useState<DocumentList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [watching, setWatching] = useState(false);
  const [tick, setTick] = useState(0);
  const seen = useRef("");

  useEffect(() => {
    const abort = new AbortController();
    let timer: number | undefined;
    let lastChange = Date.now();
    const load = async () => {
      try {
        const body = await listDocuments(abort.signal);
        setList(body);
        setError(null);
        const now = signature(body);
        if (now !== seen.current) {
          seen.current = now;
          lastChange = Date.now();
        }
        const waiting = stillWorking(body.documents);
        const patient = Date.now() - lastChange < POLL_PATIENCE_MS;
        setWatching(waiting && patient);
        if (waiting && patient) timer = window.setTimeout(() => void load(), POLL_MS);
      } catch (exc) {
        if (abort.signal.aborted) return;
        setError(`Cannot list the corpus: ${describeError(exc)}`);
        setWatching(false);
      }
    };
    void load();
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [version, tick]);

  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { list, error, watching, refresh };
}
