import { describe, expect, it } from "vitest";

import { chatRequest } from "./useChat";

describe("chatRequest", () => {
  it("asks for the prompt and raw output only in developer mode", () => {
    expect(chatRequest("Warranty?", "rag", "c1", true)).toEqual({
      question: "Warranty?",
      corpus: "rag",
      conversation_id: "c1",
      debug: true,
    });
    const plain = chatRequest("Warranty?", "graph", null, false);
    expect(plain).toEqual({ question: "Warranty?", corpus: "graph", conversation_id: null });
    expect("debug" in plain).toBe(false);
  });
});
