import { describe, expect, it } from "vitest";

import type { ConversationDetail, Message } from "../api/types";
import { day, GRAPH_FOUND, source } from "../test/fixtures";
import { DEGRADED_ON_RECORD, turnsFrom } from "./history";

function message(
  id: string,
  role: "user" | "assistant",
  content: string,
  extra: Partial<Message> = {},
): Message {
  return {
    message_id: id,
    role,
    content,
    created_at: "2026-03-01T10:00:00Z",
    retrieval_method: null,
    chat_engine: null,
    condensed_query: null,
    reasoning: null,
    latency_ms: null,
    target_corpus: null,
    graph_evidence: null,
    sources: [],
    days: [],
    ...extra,
  };
}

function detail(messages: Message[]): ConversationDetail {
  return {
    conversation_id: "c1",
    title: "Kettle",
    created_at: "2026-03-01T10:00:00Z",
    updated_at: "2026-03-01T10:00:00Z",
    group_id: null,
    message_count: messages.length,
    messages,
  };
}

describe("turnsFrom", () => {
  it("pairs questions with answers and rebuilds each answer's evidence", () => {
    const turns = turnsFrom(
      detail([
        message("u1", "user", "How long is the warranty?"),
        message("a1", "assistant", "27 months [2], see also [2] and [7].", {
          retrieval_method: "hybrid",
          chat_engine: "simple",
          reasoning: "thinking",
          latency_ms: { retrieve: 12 },
          sources: [source(1), source(2)],
        }),
        message("u2", "user", "And for the toaster?"),
        message("a2", "assistant", "Two years [1].", {
          retrieval_method: "bm25",
          chat_engine: "condense_context",
          condensed_query: "toaster warranty",
          sources: [source(1)],
        }),
      ]),
    );
    expect(turns.map((t) => t.id)).toEqual(["m-a1", "m-a2"]);
    const [first, second] = turns;
    expect(first).toMatchObject({
      question: "How long is the warranty?",
      status: "done",
      answer: "27 months [2], see also [2] and [7].",
      reasoning: "thinking",
      cited: [2], // [7] names no source, and [2] counts once
      timings_ms: { retrieve: 12 },
    });
    expect(first!.retrieval).toMatchObject({
      query: "How long is the warranty?",
      condensed_query: null,
      method: "hybrid",
      chat_engine: "simple",
    });
    expect(first!.retrieval!.sources.map((s) => s.n)).toEqual([1, 2]);
    expect(second!.retrieval).toMatchObject({
      query: "And for the toaster?",
      condensed_query: "toaster warranty",
      chat_engine: "condense_context",
    });
    expect(second!.cited).toEqual([1]);
  });

  it("keeps a question left without an answer as a failed turn", () => {
    const turns = turnsFrom(detail([message("u1", "user", "Hello?")]));
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ status: "error", retrieval: null, error: { code: "no_answer" } });
  });

  it("rebuilds graph answers with their days, and marks a graph turn that degraded", () => {
    const [graph, degraded, documents] = turnsFrom(
      detail([
        message("u1", "user", "Who is going to Lisbon?"),
        message("a1", "assistant", "Maya and Jonas [2], see [1] and [3].", {
          retrieval_method: "graph",
          target_corpus: "graph",
          graph_evidence: GRAPH_FOUND,
          days: [day(1), day(2)],
        }),
        message("u2", "user", "And the kettle?"),
        message("a2", "assistant", "27 months [1].", {
          retrieval_method: "hybrid",
          target_corpus: "graph",
          sources: [source(1)],
        }),
        message("u3", "user", "Old question"),
        message("a3", "assistant", "Old answer [1].", { sources: [source(1)] }),
      ]),
    );
    expect(graph).toMatchObject({ target_corpus: "graph", cited: [2, 1] });
    expect(graph!.retrieval).toMatchObject({ corpus: "graph", degraded: null, graph: GRAPH_FOUND });
    expect(graph!.retrieval!.days.map((d) => d.n)).toEqual([1, 2]);
    expect(degraded).toMatchObject({ target_corpus: "graph", cited: [1] });
    expect(degraded!.retrieval).toMatchObject({ corpus: "rag", degraded: DEGRADED_ON_RECORD, days: [] });
    // history from before the graph: a document turn
    expect(documents).toMatchObject({ target_corpus: "rag" });
    expect(documents!.retrieval).toMatchObject({ corpus: "rag", degraded: null, graph: null });
  });
});
