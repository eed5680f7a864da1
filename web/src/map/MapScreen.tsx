/**
 * The codebase map screen (`#/map`, `?card=` spotlights one): the system's parts as
 * cards on a pan/zoom canvas, grouped Ingestion / Query path / Graph corpus /
 * Observability (with the entry points and the stores and model servers), and beside
 * it the chosen card: what it is, where it is defined (`path:line`, copyable), and what
 * it uses and what uses it. The same cards are listed as buttons below the canvas for
 * the keyboard and screen readers, since a canvas is neither.
 */
import { useState } from "react";

import { KIND_LABELS, type CardKind, type MapCard } from "./codebaseMap.data";
import { MapCanvas } from "./MapCanvas";
import {
  CODEBASE_MAP,
  KIND_COLOURS,
  cardById,
  downstreamOf,
  relationsOf,
  sourceText,
  type CodebaseMap,
  type Relation,
} from "./model";

interface MapScreenProps {
  /** The spotlit card's id (from the URL), or null. */
  card: string | null;
  onSelect: (card: string | null) => void;
  map?: CodebaseMap;
}

function Swatch({ kind }: { kind: CardKind }) {
  return <span className="swatch" style={{ background: KIND_COLOURS[kind] }} aria-hidden="true" />;
}

/** `path:line` with a button that copies it. */
function SourceLine({ card }: { card: MapCard }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  const text = sourceText(card);
  const copy = () => {
    const clipboard = typeof navigator === "undefined" ? undefined : navigator.clipboard;
    if (!clipboard) {
      setCopied("no");
      return;
    }
    clipboard.writeText(text).then(
      () => setCopied("yes"),
      () => setCopied("no"),
    );
  };
  return (
    <div className="map-source">
      <code>{text}</code>{" "}
      <button type="button" className="link-button" onClick={copy}>
        Copy<span className="visually-hidden"> {text}</span>
      </button>
      <span className="muted" aria-live="polite">
        {copied === "yes" ? " Copied." : copied === "no" ? " Cannot copy here: select the text." : ""}
      </span>
      <p className="hint">
        Defined as <code>{card.source.symbol}</code>
      </p>
    </div>
  );
}

function Relations({
  title,
  relations,
  arrow,
  onSelect,
}: {
  title: string;
  relations: Relation[];
  arrow: string;
  onSelect: (card: string) => void;
}) {
  if (relations.length === 0) return null;
  return (
    <>
      <h4>{title}</h4>
      <ul className="map-relations">
        {relations.map(({ card, label }) => (
          <li key={`${card.id}:${label}`}>
            <span aria-hidden="true">{arrow} </span>
            <button type="button" className="link-button" onClick={() => onSelect(card.id)}>
              {card.title}
            </button>
            <span className="muted">: {label}</span>
          </li>
        ))}
      </ul>
    </>
  );
}

function CardDetails({
  map,
  card,
  onSelect,
}: {
  map: CodebaseMap;
  card: MapCard;
  onSelect: (c: string | null) => void;
}) {
  const group = map.groups.find((g) => g.id === card.group);
  const { out, in: into } = relationsOf(map, card.id);
  const down = downstreamOf(map, card.id).size;
  return (
    <>
      <h3 id="map-card-title">{card.title}</h3>
      <p className="muted">
        <Swatch kind={card.kind} /> {KIND_LABELS[card.kind]} {"\u00b7"} {group?.label}
      </p>
      <p className="map-description">{card.description}</p>
      <SourceLine card={card} />
      <p>
        {down === 0
          ? "Nothing runs downstream of it."
          : `${down} card${down === 1 ? " runs" : "s run"} downstream of it (lit on the map).`}
      </p>
      <Relations title="Uses" relations={out} arrow={"\u2192"} onSelect={onSelect} />
      <Relations title="Used by" relations={into} arrow={"\u2190"} onSelect={onSelect} />
      <button type="button" onClick={() => onSelect(null)}>
        Clear the spotlight
      </button>
    </>
  );
}

export function MapScreen({ card, onSelect, map = CODEBASE_MAP }: MapScreenProps) {
  const chosen = cardById(map, card);
  const kinds = Object.keys(KIND_LABELS) as CardKind[];
  return (
    <div className="map-screen">
      <div className="map-head">
        <h2 id="map-heading">Codebase map</h2>
        <p className="muted">
          {map.cards.length} cards, {map.edges.length} relations. Click a card to spotlight what runs
          downstream of it; drag to pan, scroll to zoom (edge labels show when zoomed in).
        </p>
      </div>
      <div className="map-layout">
        <div className="map-main">
          <MapCanvas map={map} selected={chosen?.id ?? null} onSelect={onSelect} />
          <nav aria-label="Cards" className="map-cards">
            {map.groups.map((group) => (
              <div key={group.id} className="map-card-group">
                <h3 title={group.description}>{group.label}</h3>
                <ul>
                  {map.cards
                    .filter((c) => c.group === group.id)
                    .map((c) => (
                      <li key={c.id}>
                        <button
                          type="button"
                          className="link-button"
                          aria-pressed={c.id === chosen?.id}
                          onClick={() => onSelect(c.id === chosen?.id ? null : c.id)}
                        >
                          <Swatch kind={c.kind} />
                          {c.title}
                        </button>
                      </li>
                    ))}
                </ul>
              </div>
            ))}
          </nav>
        </div>
        <aside className="map-details" aria-labelledby={chosen ? "map-card-title" : undefined}>
          {chosen ? (
            <CardDetails map={map} card={chosen} onSelect={onSelect} />
          ) : (
            <>
              {card !== null && (
                <p className="error" role="alert">
                  No card is called {card}.
                </p>
              )}
              <p>Pick a card to see what it does, where it is defined and what it uses.</p>
              <ul className="map-legend" aria-label="Kinds of card">
                {kinds.map((kind) => (
                  <li key={kind}>
                    <Swatch kind={kind} /> {KIND_LABELS[kind]}
                  </li>
                ))}
              </ul>
              <p className="hint">
                The map is curated in <code>web/src/map/codebaseMap.data.ts</code>; a test fails when a
                card&apos;s file is renamed or its definition moves.
              </p>
            </>
          )}
        </aside>
      </div>
    </div>
  );
}
