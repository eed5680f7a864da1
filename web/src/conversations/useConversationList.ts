/**
 * The sidebar's data: the conversations (filtered by the title search, once the user
 * pauses typing) and the groups, re-read on `refreshToken` and after every action;
 * `act` runs an action and reports its failure.
 */
import { useEffect, useState } from "react";

import { describeError } from "../api/client";
import { listConversations, listGroups } from "../api/resources";
import type { ConversationSummary, Group } from "../api/types";

export interface ConversationList {
  conversations: ConversationSummary[];
  groups: Group[];
  /** The first list has arrived. */
  loaded: boolean;
  /** What is typed in the search box. */
  query: string;
  setQuery: (query: string) => void;
  /** The search the list answers (the query, once typing pauses). */
  searched: string;
  error: string | null;
  /** Read the list again. */
  reload: () => void;
  /** Runs an action, reporting its failure as "<what> failed: …", and re-reads the list. */
  act: (what: string, action: () => Promise<unknown>) => Promise<void>;
}

export function useConversationList(refreshToken: string): ConversationList {
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [groups, setGroups] = useState<Group[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [query, setQuery] = useState("");
  const [searched, setSearched] = useState("");
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);

  // search as the user types, once they pause
  useEffect(() => {
    const timer = window.setTimeout(() => setSearched(query), 250);
    return () => window.clearTimeout(timer);
  }, [query]);

  useEffect(() => {
    const abort = new AbortController();
    Promise.all([listConversations(searched, abort.signal), listGroups(abort.signal)]).then(
      ([list, groupList]) => {
        setConversations(list);
        setGroups(groupList);
        setLoaded(true);
        setError(null);
      },
      (exc: unknown) => {
        if (!abort.signal.aborted) setError(`Cannot list conversations: ${describeError(exc)}`);
      },
    );
    return () => abort.abort();
  }, [searched, refreshToken, version]);

  const reload = () => setVersion((v) => v + 1);
  const act = async (what: string, action: () => Promise<unknown>) => {
    try {
      await action();
      setError(null);
    } catch (exc) {
      setError(`${what} failed: ${describeError(exc)}`);
    }
    reload();
  };

  return { conversations, groups, loaded, query, setQuery, searched, error, reload, act };
}
