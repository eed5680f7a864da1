import { describe, expect, it } from "vitest";

import { done as doneEvent, graphRetrieval, retrieval } from "../test/fixtures";
import {
  chatReducer,
  evidenceCount,
  initialChatState,
  isLive,
  type ChatAction,
  type ChatState,
} from "./state";

function run(...actions: ChatAction[]): ChatState {
  return actions.reduce(chatReducer, initialChatState);
}

const ask: ChatAction = { type: "ask", id: "t1", question: "How long is the warranty?", corpus: "rag" };

describe("chatReducer", () => {
  it("streams a turn from retrieval through tokens to done", () => {
    let state = run(ask);
    expect(state.turns[0]?.status).toBe("retrieving");
    expect(state.shownTurnId).toBe("t1");

    state = run(
      ask,
      { type: "event", id: "t1", event: { type: "retrieval", data: retrieval(2) } },
      { type: "event", id: "t1", event: { type: "token", data: { delta: "27 months" } } },
      { type: "event", id: "t1", event: { type: "token", data: { delta: " [1]." } } },
    );
    const streaming = state.turns[0]!;
    expect(streaming.status).toBe("answering");
    expect(streaming.answer).toBe("27 months [1].");
    expect(streaming.retrieval?.sources).toHaveLength(2);

    state = chatReducer(state, {
      type: "event",
      id: "t1",
      event: {
        type: "done",
        data: doneEvent("27 months [1].", { cited: [1], timings_ms: { generate: 40 } }),
      },
    });
    const done = state.turns[0]!;
    expect(done.status).toBe("done");
    expect(done.cited).toEqual([1]);
    expect(done.timings_ms).toEqual({ retrieve: 12.5, generate: 40 });
    expect(isLive(done)).toBe(false);
  });

  it("keeps the prompt and raw output done brings in developer mode, and none otherwise", () => {
    const debug = {
      messages: [{ role: "system", content: "You answer questions." }],
      raw_output: "<think>hm</think>27 months.",
    };
    const answer = (data: ReturnType<typeof doneEvent>) =>
      run(
        ask,
        { type: "event", id: "t1", event: { type: "retrieval", data: retrieval(1) } },
        { type: "event", id: "t1", event: { type: "done", data } },
      ).turns[0]!;
    expect(answer(doneEvent("27 months.", { debug })).debug).toEqual(debug);
    expect(answer(doneEvent("27 months.")).debug).toBeNull();
  });

  it("shows the place in line while the model is busy, until the first token", () => {
    const queued = run(
      ask,
      { type: "event", id: "t1", event: { type: "retrieval", data: retrieval(1) } },
      {
        type: "event",
        id: "t1",
        event: { type: "queued", data: { position: 2, reason: "answers", message: "1 ahead" } },
      },
      {
        type: "event",
        id: "t1",
        event: { type: "queued", data: { position: 1, reason: "context", message: "next" } },
      },
    );
    expect(queued.turns[0]?.queue).toEqual({ position: 1, reason: "context", message: "next" });
    expect(isLive(queued.turns[0]!)).toBe(true);
    const answering = chatReducer(queued, {
      type: "event",
      id: "t1",
      event: { type: "token", data: { delta: "27" } },
    });
    expect(answering.turns[0]?.queue).toBeNull();
  });

  it("keeps reasoning apart from the answer, and done's reasoning wins", () => {
    const state = run(
      ask,
      { type: "event", id: "t1", event: { type: "reasoning", data: { delta: "The kettle " } } },
      { type: "event", id: "t1", event: { type: "reasoning", data: { delta: "doc says." } } },
      { type: "event", id: "t1", event: { type: "token", data: { delta: "27" } } },
    );
    expect(state.turns[0]?.reasoning).toBe("The kettle doc says.");
    expect(state.turns[0]?.answer).toBe("27");
    const done = chatReducer(state, {
      type: "event",
      id: "t1",
      event: { type: "done", data: doneEvent("27", { reasoning: "cleaned" }) },
    });
    expect(done.turns[0]?.reasoning).toBe("cleaned");
  });

  it("records an in-band error and ignores events after the turn ended", () => {
    const state = run(
      ask,
      {
        type: "event",
        id: "t1",
        event: { type: "error", data: { code: "model_unavailable", message: "down" } },
      },
      { type: "event", id: "t1", event: { type: "token", data: { delta: "late" } } },
      { type: "stopped", id: "t1" },
    );
    expect(state.turns[0]).toMatchObject({
      status: "error",
      answer: "",
      error: { code: "model_unavailable" },
    });
  });

  it("stops a live turn but keeps what it streamed", () => {
    const state = run(
      ask,
      { type: "event", id: "t1", event: { type: "token", data: { delta: "partial" } } },
      { type: "stopped", id: "t1" },
    );
    expect(state.turns[0]).toMatchObject({ status: "stopped", answer: "partial" });
  });

  it("retries a failed turn in place, from scratch", () => {
    const state = run(
      ask,
      { type: "ask", id: "t2", question: "Second?", corpus: "rag" },
      { type: "failed", id: "t1", error: { code: "network_error", message: "offline" } },
      { type: "focus", id: "t2", source: 1 },
      { type: "retry", id: "t1" },
    );
    expect(state.turns.map((t) => t.id)).toEqual(["t1", "t2"]);
    expect(state.turns[0]).toMatchObject({
      status: "retrieving",
      error: null,
      question: "How long is the warranty?",
    });
    expect(state.shownTurnId).toBe("t1");
    expect(state.focusedSource).toBeNull();
  });

  it("focus shows a turn's evidence and highlights one source", () => {
    const state = run(
      ask,
      { type: "ask", id: "t2", question: "Next", corpus: "rag" },
      { type: "focus", id: "t1", source: 3 },
    );
    expect(state.shownTurnId).toBe("t1");
    expect(state.focusedSource).toBe(3);
    // a new question shows its own evidence with nothing highlighted
    const next = chatReducer(state, { type: "ask", id: "t3", question: "Third", corpus: "rag" });
    expect(next.shownTurnId).toBe("t3");
    expect(next.focusedSource).toBeNull();
  });

  it("continues the server's conversation once a turn is saved", () => {
    const retrieved = run(ask, {
      type: "event",
      id: "t1",
      event: { type: "retrieval", data: retrieval(1, { conversation_id: "c9" }) },
    });
    // not before `done`: a turn that fails is not saved, nor is a new conversation
    expect(retrieved.conversationId).toBeNull();
    const saved = chatReducer(retrieved, {
      type: "event",
      id: "t1",
      event: { type: "done", data: doneEvent("x", { conversation_id: "c9" }) },
    });
    expect(saved.conversationId).toBe("c9");
    const next = chatReducer(saved, { type: "ask", id: "t2", question: "And the kettle?", corpus: "rag" });
    expect(
      chatReducer(next, { type: "failed", id: "t2", error: { code: "x", message: "y" } }).conversationId,
    ).toBe("c9");
  });

  it("loads a saved conversation on its last answer, drops stale events, and resets", () => {
    const streaming = run(ask);
    const saved = { ...streaming.turns[0]!, id: "m-a1", status: "done" as const };
    const loaded = chatReducer(streaming, {
      type: "load",
      conversationId: "c7",
      turns: [{ ...saved, id: "m-a0" }, saved],
    });
    expect(loaded.conversationId).toBe("c7");
    expect(loaded.shownTurnId).toBe("m-a1");
    expect(loaded.turns.map((t) => t.id)).toEqual(["m-a0", "m-a1"]);
    // the aborted stream of the replaced turn changes nothing
    const late = chatReducer(loaded, {
      type: "event",
      id: "t1",
      event: { type: "token", data: { delta: "x" } },
    });
    expect(late).toBe(loaded);
    expect(chatReducer(loaded, { type: "reset" })).toEqual(initialChatState);
  });

  it("keeps a graph answer's days and findings, and retries it against the graph", () => {
    const askGraph: ChatAction = {
      type: "ask",
      id: "g1",
      question: "Who is going to Lisbon?",
      corpus: "graph",
    };
    const state = run(askGraph, {
      type: "event",
      id: "g1",
      event: { type: "retrieval", data: graphRetrieval(2) },
    });
    const turn = state.turns[0]!;
    expect(turn.target_corpus).toBe("graph");
    expect(turn.retrieval).toMatchObject({ corpus: "graph", degraded: null, sources: [] });
    expect(turn.retrieval?.days.map((d) => d.n)).toEqual([1, 2]);
    expect(turn.retrieval?.graph?.entities.map((e) => e.name)).toEqual(["Maya Chen", "Lisbon"]);
    expect(evidenceCount(turn.retrieval)).toBe(2);
    const failed = chatReducer(state, { type: "failed", id: "g1", error: { code: "x", message: "y" } });
    const retried = chatReducer(failed, { type: "retry", id: "g1" });
    expect(retried.turns[0]).toMatchObject({ target_corpus: "graph", status: "retrieving", retrieval: null });
  });

  it("records why a graph question was answered from the documents", () => {
    const state = run(
      { type: "ask", id: "g1", question: "Who?", corpus: "graph" },
      {
        type: "event",
        id: "g1",
        event: {
          type: "retrieval",
          data: retrieval(2, { target_corpus: "graph", degraded: "the message graph is switched off" }),
        },
      },
    );
    expect(state.turns[0]?.retrieval).toMatchObject({
      corpus: "rag",
      degraded: "the message graph is switched off",
      days: [],
      graph: null,
    });
    expect(evidenceCount(state.turns[0]!.retrieval)).toBe(2);
  });
});
