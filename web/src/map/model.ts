/**
 * The codebase map's logic, free of React and Cytoscape: what runs downstream of a
 * card, a card's relations in words, where each card sits, the elements Cytoscape
 * draws, and the consistency of the data (ids unique, edges between known cards).
 */
import {
  CARDS,
  EDGES,
  GROUPS,
  KIND_LABELS,
  type CardKind,
  type MapCard,
  type MapEdge,
  type MapGroup,
} from "./codebaseMap.data";

export interface CodebaseMap {
  groups: readonly MapGroup[];
  cards: readonly MapCard[];
  edges: readonly MapEdge[];
}

export const CODEBASE_MAP: CodebaseMap = { groups: GROUPS, cards: CARDS, edges: EDGES };

/** One grid unit on the canvas, in pixels: a card is 180 x 56 (its kind is its colour). */
export const COLUMN_PX = 212;
export const ROW_PX = 100;
export const CARD_WIDTH = 180;
export const CARD_HEIGHT = 56;

/** A card's colour, by what it stands for. */
export const KIND_COLOURS: Record<CardKind, string> = {
  entry: "#1f3a8a",
  route: "#1f5fd6",
  sensor: "#b45309",
  job: "#6d28d9",
  asset: "#0f766e",
  registry: "#92400e",
  component: "#475569",
  store: "#166534",
  model: "#b91c1c",
};

export function cardById(map: CodebaseMap, id: string | null): MapCard | null {
  return id === null ? null : (map.cards.find((c) => c.id === id) ?? null);
}

/**
 * The cards that run downstream of `start`: every card reached by following edges
 * forward (what it starts, feeds, calls or writes, and so on), `start` not included.
 */
export function downstreamOf(map: CodebaseMap, start: string): Set<string> {
  const next = new Map<string, string[]>();
  for (const e of map.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const seen = new Set<string>();
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift() as string;
    for (const to of next.get(at) ?? []) {
      if (to === start || seen.has(to)) continue;
      seen.add(to);
      queue.push(to);
    }
  }
  return seen;
}

export interface Relation {
  card: MapCard;
  label: string;
}

/** What a card uses (`out`) and what uses it (`in`), each with the edge's words. */
export function relationsOf(map: CodebaseMap, id: string): { out: Relation[]; in: Relation[] } {
  const relation = (other: string, label: string): Relation[] => {
    const card = cardById(map, other);
    return card ? [{ card, label }] : [];
  };
  return {
    out: map.edges.filter((e) => e.from === id).flatMap((e) => relation(e.to, e.label)),
    in: map.edges.filter((e) => e.to === id).flatMap((e) => relation(e.from, e.label)),
  };
}

/** Where a card's centre is drawn, in canvas pixels. */
export function cardPosition(map: CodebaseMap, card: MapCard): { x: number; y: number } {
  const group = map.groups.find((g) => g.id === card.group);
  const [gx, gy] = group?.at ?? [0, 0];
  return { x: (gx + card.at[0]) * COLUMN_PX, y: (gy + card.at[1]) * ROW_PX };
}

/** `path:line`, as a card shows its source. */
export function sourceText(card: MapCard): string {
  return `${card.source.path}:${card.source.line}`;
}

export interface MapElement {
  group: "nodes" | "edges";
  data: Record<string, string | number>;
  position?: { x: number; y: number };
  classes?: string;
}

/** The elements Cytoscape draws: a compound node per group, a node per card, an edge per relation. */
export function mapElements(map: CodebaseMap): MapElement[] {
  return [
    ...map.groups.map((g): MapElement => ({
      group: "nodes",
      data: { id: `group:${g.id}`, label: g.label },
      classes: "group",
    })),
    ...map.cards.map((c): MapElement => ({
      group: "nodes",
      data: {
        id: c.id,
        parent: `group:${c.group}`,
        label: c.title,
        kind: KIND_LABELS[c.kind],
        colour: KIND_COLOURS[c.kind],
      },
      position: cardPosition(map, c),
      classes: "card",
    })),
    ...map.edges.map((e, i): MapElement => ({
      group: "edges",
      data: { id: `edge:${i}`, source: e.from, target: e.to, label: e.label },
    })),
  ];
}

/**
 * What is wrong with the data itself (not its source references): duplicate ids, a
 * card in an unknown group or on another card's place, an edge naming an unknown card
 * or pointing at itself, duplicate edges, a card no edge touches.
 */
export function mapProblems(map: CodebaseMap): string[] {
  const problems: string[] = [];
  const groups = new Set(map.groups.map((g) => g.id));
  const ids = new Set<string>();
  const places = new Map<string, string>();
  for (const card of map.cards) {
    if (ids.has(card.id)) problems.push(`two cards are called ${card.id}`);
    ids.add(card.id);
    if (!groups.has(card.group)) problems.push(`${card.id} is in an unknown group ${card.group}`);
    const place = `${card.group}@${card.at.join(",")}`;
    const other = places.get(place);
    if (other) problems.push(`${card.id} is drawn on top of ${other} (${place})`);
    places.set(place, card.id);
    if (!card.description || card.description.includes("\n"))
      problems.push(`${card.id} needs a one-line description`);
  }
  const touched = new Set<string>();
  const pairs = new Set<string>();
  for (const edge of map.edges) {
    for (const end of [edge.from, edge.to]) {
      if (!ids.has(end)) problems.push(`an edge names an unknown card ${end} (${edge.from} -> ${edge.to})`);
      touched.add(end);
    }
    if (edge.from === edge.to) problems.push(`${edge.from} points at itself`);
    const pair = `${edge.from} -> ${edge.to}`;
    if (pairs.has(pair)) problems.push(`two edges ${pair}`);
    pairs.add(pair);
    if (!edge.label.trim()) problems.push(`the edge ${pair} says nothing`);
  }
  for (const id of ids) if (!touched.has(id)) problems.push(`no edge touches ${id}`);
  return problems;
}
