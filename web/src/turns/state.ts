/**
 * The chat's turns and state: questions, their streamed answers and which evidence is
 * shown. The model the chat screen, the evidence panel, the ratings and a saved
 * conversation's history (`./history`) all build on; it imports no feature folder.
 */
import type { ChatEvent } from "../api/chat";
import type {
  AnswerDebug,
  AnswerQuote,
  Corpus,
  DaySource,
  ErrorEvent,
  Feedback,
  GraphEvidence,
  QueuedEvent,
  Source,
} from "../api/types";

export type TurnStatus = "retrieving" | "answering" | "done" | "stopped" | "error";

/**
 * The evidence behind an answer: a live `retrieval` event, or the snapshot a saved
 * conversation keeps (whose method and engine are plain strings, null on old turns).
 * A document answer has `sources`; a message-graph answer has `days` (conversation
 * days, numbered as cited) and `graph` (the entities and relations it found).
 */
export interface Evidence {
  query: string;
  condensed_query: string | null;
  method: string | null;
  chat_engine: string | null;
  sources: Source[];
  /** What the evidence came from. */
  corpus: Corpus;
  /** Why a graph question was answered from the documents instead; null when it was not. */
  degraded: string | null;
  graph: GraphEvidence | null;
  days: DaySource[];
}

/** How many numbered pieces of evidence an answer can cite (chunks or days). */
export function evidenceCount(evidence: Evidence | null): number {
  return evidence === null ? 0 : evidence.sources.length + evidence.days.length;
}

/** One question and everything streamed back for it. */
export interface Turn {
  id: string;
  question: string;
  /** The corpus the question was asked of (the evidence says what answered it). */
  target_corpus: Corpus;
  status: TurnStatus;
  answer: string;
  reasoning: string;
  retrieval: Evidence | null;
  cited: number[];
  timings_ms: Record<string, number>;
  error: ErrorEvent | null;
  /** While the model is busy with other chats: this turn's place in line. */
  queue?: QueuedEvent | null;
  /** The saved assistant message (from `done`, or the loaded history): what ratings are about. */
  message_id?: string | null;
  /** When the document index last changed before this answer's retrieval (ISO time). */
  index_as_of?: string | null;
  /** Ratings saved on the answer and its sources (a loaded conversation's). */
  feedback?: Feedback[];
  /** The prompt and the model's raw output (from `done`, when asked in developer mode; never saved). */
  debug?: AnswerDebug | null;
}

export interface ChatState {
  turns: Turn[];
  /** The turn whose evidence the panel shows. */
  shownTurnId: string | null;
  /** The source a citation pointed at, highlighted in the panel. */
  focusedSource: number | null;
  /** The server's conversation these turns belong to; the next question continues it. */
  conversationId: string | null;
}

export type ChatAction =
  | { type: "ask"; id: string; question: string; corpus: Corpus }
  | { type: "retry"; id: string }
  | { type: "event"; id: string; event: ChatEvent }
  | { type: "stopped"; id: string }
  | { type: "failed"; id: string; error: ErrorEvent }
  | { type: "focus"; id: string; source: number | null }
  | { type: "load"; conversationId: string; turns: Turn[] }
  | { type: "reset" };

export const initialChatState: ChatState = {
  turns: [],
  shownTurnId: null,
  focusedSource: null,
  conversationId: null,
};

/** True while a turn still expects events. */
export function isLive(turn: Turn): boolean {
  return turn.status === "retrieving" || turn.status === "answering";
}

function fresh(id: string, question: string, corpus: Corpus): Turn {
  return {
    id,
    question,
    target_corpus: corpus,
    status: "retrieving",
    answer: "",
    reasoning: "",
    retrieval: null,
    cited: [],
    timings_ms: {},
    error: null,
  };
}

/** `sources` with each one's quotes from the answer (replacing what they held). */
export function withQuotes(sources: Source[], quotes: AnswerQuote[] | undefined): Source[] {
  if (!quotes || quotes.length === 0) return sources;
  return sources.map((source) => ({
    ...source,
    quotes: quotes.filter((q) => q.source === source.n).map(({ text, start, end }) => ({ text, start, end })),
  }));
}

function applyEvent(turn: Turn, event: ChatEvent): Turn {
  switch (event.type) {
    case "retrieval": {
      const { query, condensed_query, method, chat_engine, sources, corpus, degraded, graph, days } =
        event.data;
      return {
        ...turn,
        status: "answering",
        retrieval: {
          query,
          condensed_query,
          method,
          chat_engine,
          sources,
          // an older server sends no graph fields: its evidence is the documents'
          corpus: corpus ?? "rag",
          degraded: degraded ?? null,
          graph: graph ?? null,
          days: days ?? [],
        },
        timings_ms: { ...event.data.timings_ms },
        index_as_of: event.data.index_as_of ?? null,
      };
    }
    case "queued":
      return { ...turn, queue: event.data };
    case "token":
      return { ...turn, status: "answering", queue: null, answer: turn.answer + event.data.delta };
    case "reasoning":
      return { ...turn, status: "answering", queue: null, reasoning: turn.reasoning + event.data.delta };
    case "done":
      return {
        ...turn,
        status: "done",
        queue: null,
        answer: event.data.answer,
        reasoning: event.data.reasoning ?? turn.reasoning,
        cited: event.data.cited,
        retrieval: turn.retrieval && {
          ...turn.retrieval,
          sources: withQuotes(turn.retrieval.sources, event.data.quotes),
        },
        timings_ms: { ...turn.timings_ms, ...event.data.timings_ms },
        message_id: event.data.message_id,
        debug: event.data.debug ?? null,
      };
    case "error":
      return { ...turn, status: "error", error: event.data };
  }
}

function update(state: ChatState, id: string, change: (turn: Turn) => Turn): ChatState {
  return { ...state, turns: state.turns.map((turn) => (turn.id === id ? change(turn) : turn)) };
}

/** The reducer behind `useChat`; events for a turn that is no longer live are dropped. */
export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "ask":
      return {
        ...state,
        turns: [...state.turns, fresh(action.id, action.question, action.corpus)],
        shownTurnId: action.id,
        focusedSource: null,
      };
    case "retry": {
      const next = update(state, action.id, (turn) => fresh(turn.id, turn.question, turn.target_corpus));
      return { ...next, shownTurnId: action.id, focusedSource: null };
    }
    case "event": {
      const turn = state.turns.find((t) => t.id === action.id);
      if (turn === undefined || !isLive(turn)) return state;
      const next = update(state, action.id, () => applyEvent(turn, action.event));
      // only `done` means the turn was saved: a failed turn's conversation may not exist
      const { type, data } = action.event;
      return type === "done" ? { ...next, conversationId: data.conversation_id } : next;
    }
    case "stopped":
      return update(state, action.id, (turn) => (isLive(turn) ? { ...turn, status: "stopped" } : turn));
    case "failed":
      return update(state, action.id, (turn) =>
        isLive(turn) ? { ...turn, status: "error", error: action.error } : turn,
      );
    case "focus":
      return { ...state, shownTurnId: action.id, focusedSource: action.source };
    case "load": {
      // a saved conversation opens on its latest answer's evidence
      const last = action.turns.at(-1);
      return {
        turns: action.turns,
        shownTurnId: last?.id ?? null,
        focusedSource: null,
        conversationId: action.conversationId,
      };
    }
    case "reset":
      return initialChatState;
  }
}
