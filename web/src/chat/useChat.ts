/** The chat screen's controller: one streamed answer at a time, stoppable and retryable. */
import { useCallback, useEffect, useReducer, useRef } from "react";

import { streamChat } from "../api/chat";
import { ApiError } from "../api/client";
import type { ChatRequest, ConversationDetail, Corpus, ErrorEvent } from "../api/types";
import { turnsFrom } from "../turns/history";
import { chatReducer, initialChatState, type ChatAction, type ChatState, type Turn } from "../turns/state";

function asError(exc: unknown): ErrorEvent {
  if (exc instanceof ApiError) return { code: exc.code, message: exc.message };
  return { code: "client_error", message: exc instanceof Error ? exc.message : String(exc) };
}

export interface ChatController {
  state: ChatState;
  dispatch: (action: ChatAction) => void;
  /** Ask `question` of the documents (`rag`) or the message graph (`graph`). */
  ask: (question: string, corpus: Corpus) => void;
  retry: (turn: Turn) => void;
  stop: () => void;
  /** Show a saved conversation (stopping any answer in flight); the next question continues it. */
  load: (detail: ConversationDetail) => void;
  /** Start over with an empty, unsaved conversation. */
  reset: () => void;
}

/**
 * The body of `POST /api/chat`. `debug` (developer mode) asks for the prompt and the
 * model's raw output in `done`; it is left out otherwise, so no other answer carries them.
 */
export function chatRequest(
  question: string,
  corpus: Corpus,
  conversationId: string | null,
  debug: boolean,
): ChatRequest {
  const request: ChatRequest = { question, corpus, conversation_id: conversationId };
  if (debug) request.debug = true;
  return request;
}

/**
 * State plus the actions the screens call; aborting the fetch is what "stop" means.
 * With `debug` (developer mode, read when a question is sent) each answer also brings
 * how it was built: see `chatRequest`.
 */
export function useChat(debug = false): ChatController {
  const [state, dispatch] = useReducer(chatReducer, initialChatState);
  const inFlight = useRef<AbortController | null>(null);
  const nextId = useRef(1);
  // read when a question is sent, so asking never waits on a render
  const conversationId = useRef<string | null>(null);
  useEffect(() => {
    conversationId.current = state.conversationId;
  }, [state.conversationId]);
  const debugRef = useRef(debug);
  useEffect(() => {
    debugRef.current = debug;
  }, [debug]);

  const run = useCallback(async (id: string, question: string, corpus: Corpus) => {
    inFlight.current?.abort();
    const abort = new AbortController();
    inFlight.current = abort;
    let finished = false;
    try {
      const request = chatRequest(question, corpus, conversationId.current, debugRef.current);
      for await (const event of streamChat(request, abort.signal)) {
        dispatch({ type: "event", id, event });
        finished ||= event.type === "done" || event.type === "error";
      }
      if (!finished) {
        dispatch({
          type: "failed",
          id,
          error: {
            code: "stream_incomplete",
            message: "The answer stream closed before the server finished it.",
          },
        });
      }
    } catch (exc) {
      if (abort.signal.aborted) dispatch({ type: "stopped", id });
      else dispatch({ type: "failed", id, error: asError(exc) });
    } finally {
      if (inFlight.current === abort) inFlight.current = null;
    }
  }, []);

  useEffect(() => () => inFlight.current?.abort(), []);

  const ask = useCallback(
    (question: string, corpus: Corpus) => {
      const id = `t${nextId.current++}`;
      dispatch({ type: "ask", id, question, corpus });
      void run(id, question, corpus);
    },
    [run],
  );

  const retry = useCallback(
    (turn: Turn) => {
      dispatch({ type: "retry", id: turn.id });
      void run(turn.id, turn.question, turn.target_corpus);
    },
    [run],
  );

  const stop = useCallback(() => inFlight.current?.abort(), []);

  const load = useCallback((detail: ConversationDetail) => {
    inFlight.current?.abort();
    conversationId.current = detail.conversation_id;
    dispatch({ type: "load", conversationId: detail.conversation_id, turns: turnsFrom(detail) });
  }, []);

  const reset = useCallback(() => {
    inFlight.current?.abort();
    conversationId.current = null;
    dispatch({ type: "reset" });
  }, []);

  return { state, dispatch, ask, retry, stop, load, reset };
}
