/**
 * The entity graph: search an entity (or take the most connected), draw what lies
 * within `depth` hops of it, re-centre by clicking a node, and drill down from the
 * entity to the conversation days it was extracted from (the transcript), and forget
 * that day's messages or its whole thread (with a receipt).
 */
import { useEffect, useMemo, useState } from "react";

import { describeError } from "../api/client";
import { getGraphDay, getNeighbourhood, listGraphEntities } from "../api/resources";
import type { ForgetReceipt, GraphDay, GraphEntityList, GraphNeighbourhood } from "../api/types";
import { ForgetReceiptView } from "../shared/ForgetReceipt";
import { neighbourhoodElements } from "./elements";
import { EntityGraph } from "./EntityGraph";
import { ForgetMessages } from "./ForgetMessages";

type Load<T> =
  | { state: "idle" }
  | { state: "loading" }
  | { state: "ready"; value: T }
  | { state: "failed"; message: string };

/** Read `fetch` whenever `key` changes (null: nothing to read). */
function useLoad<T>(key: string | null, fetch: (signal: AbortSignal) => Promise<T>, what: string): Load<T> {
  const [load, setLoad] = useState<Load<T>>({ state: "idle" });
  useEffect(() => {
    if (key === null) {
      setLoad({ state: "idle" });
      return;
    }
    const abort = new AbortController();
    setLoad({ state: "loading" });
    fetch(abort.signal).then(
      (value) => setLoad({ state: "ready", value }),
      (exc: unknown) => {
        if (!abort.signal.aborted)
          setLoad({ state: "failed", message: `Cannot read ${what}: ${describeError(exc)}` });
      },
    );
    return () => abort.abort();
    // `key` names everything `fetch` reads
  }, [key]);
  return load;
}

function Failed({ load }: { load: Load<unknown> }) {
  if (load.state !== "failed") return null;
  return (
    <p className="error" role="alert">
      {load.message}
    </p>
  );
}

interface GraphExplorerProps {
  /** The entity the URL centres on (null: the most connected one). */
  entity: string | null;
  /** The day the URL opens (null: none). */
  day: string | null;
  /** Changes when a build changed the graph. */
  version: number;
  onEntity: (entity: string) => void;
  onDay: (docKey: string | null) => void;
  /** Messages were forgotten: the graph changed, read it again. */
  onForgotten?: () => void;
}

export function GraphExplorer({ entity, day, version, onEntity, onDay, onForgotten }: GraphExplorerProps) {
  const [forgotten, setForgotten] = useState<{ text: string; receipt: ForgetReceipt } | null>(null);
  const [query, setQuery] = useState("");
  const [searched, setSearched] = useState("");
  const [depth, setDepth] = useState(1);
  useEffect(() => {
    const timer = window.setTimeout(() => setSearched(query), 250);
    return () => window.clearTimeout(timer);
  }, [query]);

  const entities = useLoad<GraphEntityList>(
    `${version}:${searched}`,
    (signal) => listGraphEntities(searched, signal),
    "the entities",
  );
  const first = entities.state === "ready" ? (entities.value.entities[0]?.name ?? null) : null;
  const center = entity ?? (searched ? null : first);
  const view = useLoad<GraphNeighbourhood>(
    center === null ? null : `${version}:${depth}:${center}`,
    (signal) => getNeighbourhood(center ?? "", depth, signal),
    `the neighbourhood of ${center}`,
  );
  const transcript = useLoad<GraphDay>(
    day === null ? null : `${version}:${day}`,
    (signal) => getGraphDay(day ?? "", signal),
    "the day",
  );

  const neighbourhood = view.state === "ready" ? view.value : null;
  const elements = useMemo(
    () => (neighbourhood ? neighbourhoodElements(neighbourhood) : null),
    [neighbourhood],
  );
  const centre = neighbourhood?.entities.find((e) => e.name === neighbourhood.center) ?? null;
  const touching =
    neighbourhood?.relations.filter(
      (r) => r.source === neighbourhood.center || r.target === neighbourhood.center,
    ) ?? [];

  return (
    <section className="documents graph-explorer" aria-labelledby="graph-explorer-heading">
      <h3 id="graph-explorer-heading">Entities</h3>
      <div className="explorer-tools">
        <label className="upload-into">
          <span>Find an entity</span>
          <input
            type="search"
            value={query}
            placeholder="e.g. Lisbon"
            onChange={(e) => setQuery(e.target.value)}
          />
        </label>
        <label className="upload-into">
          <span>Reach</span>
          <select value={depth} onChange={(e) => setDepth(Number(e.target.value))}>
            <option value={1}>1 hop</option>
            <option value={2}>2 hops</option>
            <option value={3}>3 hops</option>
          </select>
        </label>
      </div>
      <Failed load={entities} />
      {entities.state === "ready" &&
        (entities.value.entities.length === 0 ? (
          <p className="muted">
            {entities.value.total === 0
              ? "The graph has no entities yet: build an archive above."
              : `No entity name contains \u201c${searched}\u201d.`}
          </p>
        ) : (
          <ul className="entity-list" aria-label="Entities found">
            {entities.value.entities.map((e) => (
              <li key={e.name}>
                <button
                  type="button"
                  className="entity-pick"
                  aria-current={e.name === center ? "true" : undefined}
                  onClick={() => onEntity(e.name)}
                >
                  <span className={`entity-type type-${e.type.toLowerCase()}`}>{e.type}</span> {e.name}
                  <span className="muted">
                    {" "}
                    {e.degree} relation{e.degree === 1 ? "" : "s"} {"\u00b7"} {e.days} day
                    {e.days === 1 ? "" : "s"}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        ))}
      {entities.state === "ready" && entities.value.entities.length > 0 && (
        <p className="muted">
          {entities.value.entities.length} of {entities.value.total} entities shown.
        </p>
      )}
      <Failed load={view} />
      {view.state === "loading" && (
        <p className="muted">
          Reading the neighbourhood of {center}
          {"\u2026"}
        </p>
      )}
      {neighbourhood && elements && (
        <div className="explorer-body">
          <EntityGraph elements={elements} center={neighbourhood.center} onSelect={onEntity} />
          <aside className="entity-details" aria-labelledby="entity-heading">
            <h4 id="entity-heading">{neighbourhood.center}</h4>
            {centre && (
              <p>
                <span className={`entity-type type-${centre.type.toLowerCase()}`}>{centre.type}</span>{" "}
                {centre.description}
              </p>
            )}
            {neighbourhood.truncated && <p className="hint">More lies within reach than the view shows.</p>}
            {touching.length > 0 && (
              <ul className="relations" aria-label={`Relations of ${neighbourhood.center}`}>
                {touching.map((r) => (
                  <li key={`${r.source}\u0000${r.target}`} title={r.description}>
                    <strong>{r.source === neighbourhood.center ? r.target : r.source}</strong>
                    {r.keywords && <span className="muted">: {r.keywords}</span>}
                  </li>
                ))}
              </ul>
            )}
            <h4>Days it comes from</h4>
            {neighbourhood.days.length === 0 ? (
              <p className="muted">No day is recorded for it.</p>
            ) : (
              <ul className="day-list" aria-label="Days it comes from">
                {neighbourhood.days.map((d) => (
                  <li key={d.doc_key}>
                    <button
                      type="button"
                      className="link-button"
                      aria-current={d.doc_key === day ? "true" : undefined}
                      data-doc-key={d.doc_key}
                      onClick={() => onDay(d.doc_key)}
                    >
                      {d.thread_name}, {d.span}
                    </button>{" "}
                    <span className="muted">
                      ({d.messages} message{d.messages === 1 ? "" : "s"})
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </aside>
        </div>
      )}
      {forgotten && (
        <div className="notice" role="status">
          <p>{forgotten.text}</p>
          <ForgetReceiptView receipt={forgotten.receipt} />
        </div>
      )}
      {day !== null && (
        <section className="transcript-view" aria-labelledby="transcript-heading">
          <div className="section-head">
            <h4 id="transcript-heading">
              {transcript.state === "ready"
                ? `${transcript.value.thread_name}, ${transcript.value.span}`
                : "Transcript"}
            </h4>
            <button type="button" className="link-button" onClick={() => onDay(null)}>
              Close the transcript
            </button>
          </div>
          <Failed load={transcript} />
          {transcript.state === "loading" && <p className="muted">Reading the day{"\u2026"}</p>}
          {transcript.state === "ready" && (
            <>
              <p className="muted">
                {transcript.value.message_guids.length} messages from <code>{transcript.value.source}</code>{" "}
                {"\u00b7"} {transcript.value.status} {"\u00b7"} <code>{transcript.value.doc_key}</code>
              </p>
              <pre className="transcript">{transcript.value.text}</pre>
              <p className="day-grain">
                The graph&apos;s unit is this whole day: what it extracted, and what an answer cites, rests on
                the day, not on one message.
              </p>
              <ForgetMessages
                docKey={transcript.value.doc_key}
                threadName={transcript.value.thread_name}
                onForgotten={(receipt, text) => {
                  setForgotten({ text, receipt });
                  onDay(null);
                  onForgotten?.();
                }}
              />
            </>
          )}
        </section>
      )}
    </section>
  );
}
