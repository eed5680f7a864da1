/**
 * The app shell: the header with the screens and tools, the corpus status (stale
 * banner, ingest progress), the conversations sidebar, the open screen (chat, corpus,
 * message graph or codebase map), the settings drawer and the ⌘K palette. The URL's
 * hash names the screen. Developer mode (kept in this browser, on by default) shows the
 * map in the header and the palette; its address works either way.
 */
import { useCallback, useEffect, useState, type MouseEvent } from "react";

import { describeError } from "./api/client";
import { getConversation } from "./api/resources";
import { useDeveloperMode } from "./app/developerMode";
import { HealthStatus } from "./app/HealthStatus";
import { routeHash, type Route } from "./app/route";
import { useRoute } from "./app/useRoute";
import { ChatScreen, type HistoryState } from "./chat/ChatScreen";
import { QUESTION_INPUT_ID } from "./chat/Composer";
import { useChat } from "./chat/useChat";
import { Sidebar } from "./conversations/Sidebar";
import { CorpusScreen } from "./corpus/CorpusScreen";
import { GraphScreen } from "./graph/GraphScreen";
import { useGraphStatus } from "./graph/useGraph";
import { CorpusStatus } from "./ingest/CorpusStatus";
import { useIngestJob } from "./ingest/useIngestJob";
import { MapScreen } from "./map/MapScreen";
import { Palette } from "./palette/Palette";
import { SettingsDrawer } from "./settings/SettingsDrawer";
import { useSettings } from "./settings/useSettings";

const SIDEBAR_ID = "conversations";
/** The palette's shortcut is shown as ⌘K on Apple systems, Ctrl K elsewhere (both work everywhere). */
const APPLE = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.userAgent);
const MAIN_ID = "main";

/** Moves focus to an element by id (skip links must not touch the hash: it is the route). */
function focusById(event: MouseEvent<HTMLAnchorElement>, id: string) {
  event.preventDefault();
  document.getElementById(id)?.focus();
}

export function App({ dagsterUrl }: { dagsterUrl: string | null }) {
  const { route, navigate } = useRoute();
  const developerMode = useDeveloperMode();
  // in developer mode each answer also brings its prompt and raw output (the evidence panel shows them)
  const chat = useChat(developerMode.on);
  const { state, load, reset } = chat;
  const [history, setHistory] = useState<HistoryState>({ state: "ready" });
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [settingsFocus, setSettingsFocus] = useState<string | null>(null);
  const [paletteOpen, setPaletteOpen] = useState(false);
  const [corpusVersion, setCorpusVersion] = useState(0);
  const settings = useSettings();
  const graph = useGraphStatus();
  const { reload: reloadSettings } = settings;
  const ingest = useIngestJob(
    useCallback(() => {
      // a finished job may have cleared the stale flag and changed every document
      reloadSettings();
      setCorpusVersion((v) => v + 1);
    }, [reloadSettings]),
  );

  // open the conversation the URL names (a reload, a sidebar link, back/forward)
  const routeId = route.view === "chat" ? route.conversationId : null;
  useEffect(() => {
    if (route.view !== "chat") return;
    if (routeId === null) {
      if (state.conversationId !== null) reset();
      setHistory({ state: "ready" });
      return;
    }
    if (routeId === state.conversationId) return;
    const abort = new AbortController();
    setHistory({ state: "loading" });
    getConversation(routeId, abort.signal).then(
      (detail) => {
        load(detail);
        setHistory({ state: "ready" });
      },
      (exc: unknown) => {
        if (!abort.signal.aborted) {
          setHistory({ state: "failed", message: `Cannot open this conversation: ${describeError(exc)}` });
        }
      },
    );
    return () => abort.abort();
    // only the route decides what to open; the conversation id changing is handled below
  }, [route.view, routeId]);

  // a new chat got saved by its first answer: its address becomes the conversation's
  useEffect(() => {
    if (state.conversationId !== null && route.view === "chat" && routeId === null) {
      navigate({ view: "chat", conversationId: state.conversationId }, true);
    }
    // only a change of conversation id moves the URL; route changes are handled above
  }, [state.conversationId]);

  const newChat = () => {
    reset();
    setSidebarOpen(false);
    navigate({ view: "chat", conversationId: null });
    requestAnimationFrame(() => document.getElementById(QUESTION_INPUT_ID)?.focus());
  };

  const chatRoute: Route = { view: "chat", conversationId: state.conversationId };
  const finished = state.turns.filter((t) => t.status === "done").length;
  const onChat = route.view === "chat";
  const current = (view: Route["view"]) => (route.view === view ? "page" : undefined);
  const skipText: Record<Exclude<Route["view"], "chat">, string> = {
    corpus: "Skip to the corpus",
    graph: "Skip to the message graph",
    map: "Skip to the codebase map",
  };
  const openSettings = useCallback((name: string | null) => {
    setSettingsFocus(name);
    setSettingsOpen(true);
  }, []);

  return (
    <div
      className="app"
      onKeyDown={(event) => {
        if (event.key === "Escape" && sidebarOpen) {
          setSidebarOpen(false);
          document.getElementById("sidebar-toggle")?.focus();
        }
      }}
    >
      {onChat ? (
        <a
          className="skip-link"
          href={`#${QUESTION_INPUT_ID}`}
          onClick={(e) => focusById(e, QUESTION_INPUT_ID)}
        >
          Skip to the question box
        </a>
      ) : (
        <a className="skip-link" href={`#${MAIN_ID}`} onClick={(e) => focusById(e, MAIN_ID)}>
          {skipText[route.view]}
        </a>
      )}
      <header className="topbar">
        <button
          type="button"
          id="sidebar-toggle"
          className="sidebar-toggle"
          aria-expanded={sidebarOpen}
          aria-controls={SIDEBAR_ID}
          onClick={() => setSidebarOpen((open) => !open)}
        >
          <span aria-hidden="true">{"\u2630"}</span> Conversations
        </button>
        <h1>Varagity</h1>
        <nav aria-label="Screens" className="screens">
          <ul>
            <li>
              <a href={routeHash(chatRoute)} aria-current={current("chat")}>
                Chat
              </a>
            </li>
            <li>
              <a href={routeHash({ view: "corpus" })} aria-current={current("corpus")}>
                Corpus
              </a>
            </li>
            <li>
              <a href={routeHash({ view: "graph", entity: null, day: null })} aria-current={current("graph")}>
                Graph
              </a>
            </li>
            {developerMode.on && (
              <li>
                <a href={routeHash({ view: "map", card: null })} aria-current={current("map")}>
                  Map
                </a>
              </li>
            )}
          </ul>
        </nav>
        <button type="button" className="settings-button" onClick={() => openSettings(null)}>
          Settings
        </button>
        <button
          type="button"
          className="palette-button"
          aria-keyshortcuts="Meta+K Control+K"
          title="Jump to a screen, conversation, document, archive, setting or map card (\u2318K or Ctrl-K)"
          onClick={() => setPaletteOpen(true)}
        >
          Jump to{"\u2026"} <kbd>{APPLE ? "\u2318K" : "Ctrl K"}</kbd>
        </button>
        <nav aria-label="Tools" className="tools">
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
      <CorpusStatus stale={settings.settings?.stale ?? null} ingest={ingest} />
      <div className={`shell${sidebarOpen ? " sidebar-open" : ""}`}>
        <Sidebar
          id={SIDEBAR_ID}
          currentId={onChat ? state.conversationId : null}
          refreshToken={`${state.conversationId}:${finished}`}
          onNewChat={newChat}
          onNavigate={() => setSidebarOpen(false)}
          onDeleted={(id) => {
            if (id === state.conversationId) newChat();
          }}
        />
        <main id={MAIN_ID} tabIndex={-1}>
          {route.view === "chat" && (
            <ChatScreen
              chat={chat}
              history={history}
              dagsterUrl={dagsterUrl}
              onNewChat={newChat}
              graph={graph.availability}
              developerMode={developerMode.on}
            />
          )}
          {route.view === "corpus" && <CorpusScreen version={corpusVersion} focusPath={route.path ?? null} />}
          {route.view === "graph" && (
            <GraphScreen
              graph={graph.availability}
              onChanged={graph.reload}
              entity={route.entity}
              day={route.day}
              archive={route.archive ?? null}
              onNavigate={(entity, day) => navigate({ view: "graph", entity, day })}
            />
          )}
          {route.view === "map" && (
            <MapScreen card={route.card} onSelect={(card) => navigate({ view: "map", card }, true)} />
          )}
        </main>
      </div>
      <SettingsDrawer
        open={settingsOpen}
        onClose={() => {
          setSettingsOpen(false);
          setSettingsFocus(null);
        }}
        settings={settings.settings}
        loadError={settings.error}
        onSaved={settings.replace}
        focusSetting={settingsFocus}
        developerMode={developerMode}
      />
      <Palette
        open={paletteOpen}
        onOpenChange={setPaletteOpen}
        developerMode={developerMode.on}
        settings={settings.settings}
        graphEnabled={graph.availability.state === "enabled"}
        navigate={navigate}
        openSettings={openSettings}
        setDeveloperMode={developerMode.set}
      />
    </div>
  );
}
