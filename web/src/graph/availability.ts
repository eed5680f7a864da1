/**
 * Whether the message graph can be asked, and the corpus the composer asks: the
 * user's choice (Documents or Messages), kept across reloads and conversations.
 */
import { ApiError, describeError } from "../api/client";
import type { Corpus, GraphStatus } from "../api/types";

/** Where the composer's Documents/Messages choice is kept. */
export const CORPUS_STORAGE = "varagity.corpus";

/** What `GET /api/graph/status` said. */
export type GraphAvailability =
  | { state: "loading" }
  | { state: "enabled"; status: GraphStatus }
  /** `403 graph_disabled`: GRAPH_ENABLED=false on the server. */
  | { state: "disabled"; message: string }
  /** The status could not be read (the graph may still answer). */
  | { state: "unknown"; message: string };

/** The availability a failed status read means. */
export function availabilityOf(exc: unknown): GraphAvailability {
  if (exc instanceof ApiError && exc.code === "graph_disabled") {
    return { state: "disabled", message: exc.message };
  }
  return { state: "unknown", message: describeError(exc) };
}

function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null; // storage blocked by the browser's privacy settings
  }
}

/** The corpus the user last chose (documents unless they picked the messages). */
export function storedCorpus(store: Storage | null = storage()): Corpus {
  return store?.getItem(CORPUS_STORAGE) === "graph" ? "graph" : "rag";
}

export function storeCorpus(corpus: Corpus, store: Storage | null = storage()): void {
  try {
    store?.setItem(CORPUS_STORAGE, corpus);
  } catch {
    // a full or blocked storage: the choice lasts this page only
  }
}

/**
 * The corpus a question is sent to: the choice, except that the messages cannot be
 * asked while the graph is switched off (the choice is kept for when it is back).
 */
export function effectiveCorpus(choice: Corpus, availability: GraphAvailability): Corpus {
  return availability.state === "disabled" ? "rag" : choice;
}

/** Why the Messages choice is unavailable or will not answer from the graph; null when it will. */
export function messagesNote(availability: GraphAvailability): string | null {
  switch (availability.state) {
    case "loading":
      return null;
    case "disabled":
      return `Messages are unavailable: ${availability.message}`;
    case "unknown":
      return `Cannot read the message graph's status (${availability.message}); a Messages question may be answered from the documents.`;
    case "enabled":
      return availability.status.built
        ? null
        : "No message graph is built yet: a Messages question is answered from the documents. Add an archive on the Graph screen.";
  }
}
