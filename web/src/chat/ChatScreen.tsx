/** The chat screen: conversation and composer beside the evidence for the shown answer. */
import { flushSync } from "react-dom";

import { sourceElementId } from "../turns/citations";
import { isLive, type Turn } from "../turns/state";
import type { ChatController } from "./useChat";
import { effectiveCorpus, type GraphAvailability } from "../graph/availability";
import { useCorpusChoice } from "../graph/useGraph";
import { Composer } from "./Composer";
import { Conversation } from "./Conversation";
import { FeedbackContext, useFeedbackState } from "../feedback/useFeedback";
import { EvidencePanel } from "../evidence/EvidencePanel";

/** Where the open conversation stands while its history is read. */
export type HistoryState = { state: "ready" } | { state: "loading" } | { state: "failed"; message: string };

interface ChatScreenProps {
  chat: ChatController;
  history: HistoryState;
  dagsterUrl: string | null;
  onNewChat: () => void;
  /** Whether the message graph can be asked. */
  graph: GraphAvailability;
  /** Developer mode: the evidence panel shows how each answer was built. */
  developerMode?: boolean;
}

export function ChatScreen({
  chat,
  history,
  dagsterUrl,
  onNewChat,
  graph,
  developerMode = false,
}: ChatScreenProps) {
  const { state, dispatch, ask, retry, stop } = chat;
  const [corpus, setCorpus] = useCorpusChoice();
  const shown = state.turns.find((turn) => turn.id === state.shownTurnId) ?? null;
  const busy = state.turns.some(isLive);
  const feedback = useFeedbackState(state.turns);

  const cite = (turn: Turn, n: number) => {
    // render the panel for this turn first, then move focus to the cited source
    flushSync(() => dispatch({ type: "focus", id: turn.id, source: n }));
    const target = document.getElementById(sourceElementId(turn.id, n));
    target?.scrollIntoView({ block: "nearest", behavior: "smooth" });
    target?.focus({ preventScroll: true });
  };

  return (
    <FeedbackContext.Provider value={feedback}>
      <div className="layout">
        <section className="chat" aria-labelledby="chat-heading">
          <h2 id="chat-heading" className="visually-hidden">
            Chat
          </h2>
          {history.state === "loading" && (
            <p className="muted" role="status">
              Loading the conversation{"\u2026"}
            </p>
          )}
          {history.state === "failed" && (
            <div className="error" role="alert">
              <p>{history.message}</p>
              <button type="button" onClick={onNewChat}>
                Start a new chat
              </button>
            </div>
          )}
          {history.state === "ready" && (
            <Conversation
              turns={state.turns}
              shownTurnId={state.shownTurnId}
              onCite={cite}
              onShowEvidence={(turn) => dispatch({ type: "focus", id: turn.id, source: null })}
              onRetry={retry}
            />
          )}
          <Composer
            busy={busy}
            disabled={history.state !== "ready"}
            onAsk={(question) => ask(question, effectiveCorpus(corpus, graph))}
            onStop={stop}
            corpus={corpus}
            onCorpus={setCorpus}
            graph={graph}
          />
        </section>
        <EvidencePanel
          turn={shown}
          focusedSource={state.focusedSource}
          dagsterUrl={dagsterUrl}
          developerMode={developerMode}
        />
      </div>
    </FeedbackContext.Provider>
  );
}
