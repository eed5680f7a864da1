/** The chat screen: conversation and composer beside the evidence for the shown answer. */
import { flushSync } from "react-dom";

import { sourceElementId } from "./chat/citations";
import { isLive, type Turn } from "./chat/state";
import { useChat } from "./chat/useChat";
import { Composer, QUESTION_INPUT_ID } from "./components/Composer";
import { Conversation } from "./components/Conversation";
import { EvidencePanel } from "./components/EvidencePanel";
import { HealthStatus } from "./components/HealthStatus";

export function App({ dagsterUrl }: { dagsterUrl: string | null }) {
  const { state, dispatch, ask, retry, stop } = useChat();
  const shown = state.turns.find((turn) => turn.id === state.shownTurnId) ?? null;
  const busy = state.turns.some(isLive);

  const cite = (turn: Turn, n: number) => {
    // render the panel for this turn first, then move focus to the cited source
    flushSync(() => dispatch({ type: "focus", id: turn.id, source: n }));
    const target = document.getElementById(sourceElementId(turn.id, n));
    target?.scrollIntoView({ block: "nearest", behavior: "smooth" });
    target?.focus({ preventScroll: true });
  };

  return (
    <>
      <a className="skip-link" href={`#${QUESTION_INPUT_ID}`}>
        Skip to the question box
      </a>
      <header className="topbar">
        <h1>Varagity</h1>
        <nav aria-label="Tools">
          <ul>
            <li>
              <a href="/docs">API reference</a>
            </li>
            {dagsterUrl && (
              <li>
                <a href={dagsterUrl} target="_blank" rel="noreferrer">
                  Dagster UI
                </a>
              </li>
            )}
          </ul>
        </nav>
        <HealthStatus />
      </header>
      <main className="layout">
        <section className="chat" aria-labelledby="chat-heading">
          <h2 id="chat-heading" className="visually-hidden">
            Chat
          </h2>
          <Conversation
            turns={state.turns}
            shownTurnId={state.shownTurnId}
            onCite={cite}
            onShowEvidence={(turn) => dispatch({ type: "focus", id: turn.id, source: null })}
            onRetry={retry}
          />
          <Composer busy={busy} onAsk={ask} onStop={stop} />
        </section>
        <EvidencePanel turn={shown} focusedSource={state.focusedSource} dagsterUrl={dagsterUrl} />
      </main>
    </>
  );
}
