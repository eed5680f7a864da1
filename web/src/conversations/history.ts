/** A saved conversation as chat turns, each answer with the evidence it was given. */
import type { ConversationDetail, Message } from "../api/types";
import { splitCitations } from "../chat/citations";
import type { Turn } from "../chat/state";

function citedIn(answer: string, sourceCount: number): number[] {
  const cited: number[] = [];
  for (const part of splitCitations(answer, sourceCount)) {
    if (part.kind === "cite" && !cited.includes(part.n)) cited.push(part.n);
  }
  return cited;
}

function answered(question: Message, answer: Message): Turn {
  return {
    id: `m-${answer.message_id}`,
    question: question.content,
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
    },
    cited: citedIn(answer.content, answer.sources.length),
    timings_ms: answer.latency_ms ?? {},
    error: null,
  };
}

function unanswered(question: Message): Turn {
  return {
    id: `m-${question.message_id}`,
    question: question.content,
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
