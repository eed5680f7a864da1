/**
 * What the palette can jump to, read afresh each time it opens: the conversations, the
 * documents and (while the graph is on) the message archives from the API, beside the
 * screens, the settings the app already holds and, in developer mode, the map's cards.
 * A list that cannot be read leaves a note; the others still come.
 */
import { useEffect, useMemo, useState } from "react";

import { describeError } from "../api/client";
import { listConversations, listDocuments, listGraphSources } from "../api/resources";
import type { ConversationSummary, DocumentInfo, GraphSourceInfo, SettingsResponse } from "../api/types";
import { CARDS, GROUPS } from "../map/codebaseMap.data";
import {
  actionItems,
  archiveItems,
  conversationItems,
  documentItems,
  mapItems,
  screenItems,
  settingItems,
} from "./items";
import type { PaletteItem } from "./palette";

interface Listed {
  conversations: ConversationSummary[];
  documents: DocumentInfo[];
  archives: GraphSourceInfo[];
  notes: string[];
  loading: boolean;
}

const NOTHING: Listed = { conversations: [], documents: [], archives: [], notes: [], loading: false };

export interface PaletteSources {
  items: PaletteItem[];
  /** Why a list is missing ("Cannot list the documents: ..."). */
  notes: string[];
  loading: boolean;
}

export function usePaletteItems(
  open: boolean,
  developerMode: boolean,
  settings: SettingsResponse | null,
  graphEnabled: boolean,
): PaletteSources {
  const [listed, setListed] = useState<Listed>(NOTHING);

  useEffect(() => {
    if (!open) return;
    const abort = new AbortController();
    setListed((prev) => ({ ...prev, loading: true }));
    const read = <T>(what: string, load: () => Promise<T>, fallback: T): Promise<[T, string | null]> =>
      load().then(
        (value): [T, string | null] => [value, null],
        (exc: unknown): [T, string | null] => [fallback, `Cannot list the ${what}: ${describeError(exc)}`],
      );
    void Promise.all([
      read("conversations", () => listConversations("", abort.signal), []),
      read("documents", () => listDocuments(abort.signal).then((l) => l.documents), []),
      graphEnabled
        ? read("message archives", () => listGraphSources(abort.signal).then((l) => l.sources), [])
        : Promise.resolve<[GraphSourceInfo[], string | null]>([[], null]),
    ]).then(([[conversations, a], [documents, b], [archives, c]]) => {
      if (abort.signal.aborted) return;
      const notes = [a, b, c].filter((n): n is string => n !== null);
      setListed({ conversations, documents, archives, notes, loading: false });
    });
    return () => abort.abort();
  }, [open, graphEnabled]);

  const items = useMemo(
    () => [
      ...screenItems(developerMode),
      ...actionItems(developerMode),
      ...conversationItems(listed.conversations),
      ...documentItems(listed.documents),
      ...archiveItems(listed.archives),
      ...settingItems(settings?.settings ?? []),
      ...(developerMode ? mapItems(CARDS, GROUPS) : []),
    ],
    [developerMode, listed, settings],
  );
  return { items, notes: listed.notes, loading: listed.loading };
}
