/** React state for the message graph: its status (availability) and the corpus choice. */
import { useCallback, useEffect, useState } from "react";

import { getGraphStatus } from "../api/resources";
import type { Corpus } from "../api/types";
import { availabilityOf, storeCorpus, storedCorpus, type GraphAvailability } from "./availability";

export interface GraphStatusController {
  availability: GraphAvailability;
  /** Read the status again (a build finished, an archive was added or removed). */
  reload: () => void;
}

export function useGraphStatus(): GraphStatusController {
  const [availability, setAvailability] = useState<GraphAvailability>({ state: "loading" });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    getGraphStatus(abort.signal).then(
      (status) => setAvailability({ state: "enabled", status }),
      (exc: unknown) => {
        if (!abort.signal.aborted) setAvailability(availabilityOf(exc));
      },
    );
    return () => abort.abort();
  }, [version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  return { availability, reload };
}

/** The composer's Documents/Messages choice, persisted in localStorage. */
export function useCorpusChoice(): [Corpus, (corpus: Corpus) => void] {
  const [corpus, setCorpus] = useState<Corpus>(() => storedCorpus());
  const choose = useCallback((next: Corpus) => {
    storeCorpus(next);
    setCorpus(next);
  }, []);
  return [corpus, choose];
}
