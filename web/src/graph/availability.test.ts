import { describe, expect, it } from "vitest";

import { memoryStorage } from "../test/fixtures";

import { ApiError } from "../api/client";
import type { GraphStatus } from "../api/types";
import {
  availabilityOf,
  CORPUS_STORAGE,
  effectiveCorpus,
  messagesNote,
  storeCorpus,
  storedCorpus,
} from "./availability";

const STATUS = {
  built: true,
  entities: 12,
  relations: 9,
  days: 2,
  messages: 8,
  sources: 1,
  refreshed_at: null,
  building: [],
  stale: null,
  engine: { name: "lightrag", package: "lightrag-hku", version: "1.5.7" },
  day_statuses: { processed: 2, pending: 0, processing: 0, failed: 0 },
} satisfies GraphStatus;

describe("the corpus choice", () => {
  it("is kept in storage and defaults to the documents", () => {
    const store = memoryStorage();
    expect(storedCorpus(store)).toBe("rag");
    storeCorpus("graph", store);
    expect(store.getItem(CORPUS_STORAGE)).toBe("graph");
    expect(storedCorpus(store)).toBe("graph");
    store.setItem(CORPUS_STORAGE, "nonsense");
    expect(storedCorpus(store)).toBe("rag");
    expect(storedCorpus(null)).toBe("rag");
  });

  it("asks the documents while the graph is switched off, keeping the choice", () => {
    const off = availabilityOf(new ApiError(403, "graph_disabled", "GRAPH_ENABLED is false."));
    expect(off).toEqual({ state: "disabled", message: "GRAPH_ENABLED is false." });
    expect(effectiveCorpus("graph", off)).toBe("rag");
    expect(effectiveCorpus("graph", { state: "enabled", status: STATUS })).toBe("graph");
    expect(messagesNote(off)).toBe("Messages are unavailable: GRAPH_ENABLED is false.");
  });

  it("says why a Messages question may be answered from the documents", () => {
    expect(messagesNote({ state: "enabled", status: STATUS })).toBeNull();
    expect(messagesNote({ state: "enabled", status: { ...STATUS, built: false } })).toMatch(
      /No message graph is built yet/,
    );
    const unknown = availabilityOf(new ApiError(0, "network_error", "Cannot reach the API"));
    expect(unknown.state).toBe("unknown");
    expect(effectiveCorpus("graph", unknown)).toBe("graph");
    expect(messagesNote(unknown)).toMatch(/Cannot reach the API/);
  });
});
