/** A saved conversation as chat turns, each answer with the evidence it was given. */
import type { ConversationDetail, Message } from "../api/types";
import { splitCitations } from "./citations";
import type { Turn } from "./state";

function citedIn(answer: string, sourceCount: number): number[] {
  const cited: number[] = [];
  for (const part of splitCitations(answer, sourceCount)) {
    if (part.kind === "cite" && !cited.includes(part.n)) cited.push(part.n);
  }
  return cited;
}

/**
 * The note a saved graph turn that fell back to the documents shows. The record keeps
 * the request (`target_corpus` graph) and no graph evidence; the live note's wording
 * (why exactly) is not stored.
 */
export const DEGRADED_ON_RECORD =
  "Asked of the messages, answered from the documents: the message graph gave no evidence for this question.";

function answered(question: Message, answer: Message): Turn {
  const target = answer.target_corpus ?? "rag";
  const days = answer.days ?? [];
  const graph = answer.graph_evidence ?? null;
  const fromGraph = graph !== null || days.length > 0;
  return {
    id: `m-${answer.message_id}`,
    question: question.content,
    target_corpus: target,
    status: "done",
    answer: answer.content,
    reasoning: answer.reasoning ?? "",
    retrieval: {
      // the stored turn keeps the rewrite; the question itself is what was searched otherwise
      query: question.content,
      condensed_query: answer.condensed_query,
      method: answer.retrieval_method,
      chat_engine: answer.chat_engine,
      sources: answer.sources,
      corpus: fromGraph ? "graph" : "rag",
      degraded: target === "graph" && !fromGraph ? DEGRADED_ON_RECORD : null,
      graph,
      days,
    },
    cited: citedIn(answer.content, answer.sources.length + days.length),
    timings_ms: answer.latency_ms ?? {},
    error: null,
    message_id: answer.message_id,
    index_as_of: answer.index_as_of ?? null,
    feedback: answer.feedback ?? [],
  };
}

function unanswered(question: Message): Turn {
  return {
    id: `m-${question.message_id}`,
    question: question.content,
    // the request's corpus is recorded on the answer; a retry asks the documents
    target_corpus: "rag",
    status: "error",
    answer: "",
    reasoning: "",
    retrieval: null,
    cited: [],
    timings_ms: {},
    error: { code: "no_answer", message: "No answer was saved for this question." },
  };
}

/**
 * The turns of a saved conversation: each user message with the assistant message
 * that follows it. Citations are read back from the answer text with the service's
 * own rule; a question left without an answer becomes a failed turn (retryable).
 */
export function turnsFrom(detail: ConversationDetail): Turn[] {
  const turns: Turn[] = [];
  const messages = detail.messages;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message === undefined || message.role !== "user") continue;
    const next = messages[i + 1];
    if (next?.role === "assistant") {
      turns.push(answered(message, next));
      i++;
    } else {
      turns.push(unanswered(message));
    }
  }
  return turns;
}
