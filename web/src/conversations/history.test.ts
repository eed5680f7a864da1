import { describe, expect, it } from "vitest";

import type { ConversationDetail, Message } from "../api/types";
import { source } from "../test/fixtures";
import { turnsFrom } from "./history";

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
});
