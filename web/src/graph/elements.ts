/** An entity's neighbourhood as the graph view draws it: nodes by hop distance, edges. */
import type { GraphNeighbourhood } from "../api/types";

export interface GraphNode {
  id: string;
  label: string;
  type: string;
  description: string;
  /** Hops from the centre (0 for the centre itself). */
  level: number;
  /** Transcript days it was extracted from. */
  days: number;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  label: string;
  description: string;
  weight: number;
}

export interface GraphElements {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/**
 * The neighbourhood's nodes and edges: each node's level is its hop distance from the
 * centre over the relations (an entity the relations do not reach sits one ring out
 * further than the farthest); a relation to an entity the answer does not list is
 * left out (the view cannot place it), as is a second relation between the same pair.
 */
export function neighbourhoodElements(view: GraphNeighbourhood): GraphElements {
  const known = new Map(view.entities.map((e) => [e.name, e]));
  const edges: GraphEdge[] = [];
  const seen = new Set<string>();
  const adjacent = new Map<string, string[]>();
  for (const r of view.relations) {
    if (!known.has(r.source) || !known.has(r.target) || r.source === r.target) continue;
    const id = [r.source, r.target].sort().join("\u0000");
    if (seen.has(id)) continue;
    seen.add(id);
    edges.push({
      id,
      source: r.source,
      target: r.target,
      label: r.keywords,
      description: r.description,
      weight: r.weight,
    });
    for (const [a, b] of [
      [r.source, r.target],
      [r.target, r.source],
    ] as const) {
      adjacent.set(a, [...(adjacent.get(a) ?? []), b]);
    }
  }
  const level = new Map<string, number>([[view.center, 0]]);
  const queue = [view.center];
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i] as string;
    for (const next of adjacent.get(at) ?? []) {
      if (level.has(next)) continue;
      level.set(next, (level.get(at) ?? 0) + 1);
      queue.push(next);
    }
  }
  const farthest = Math.max(0, ...level.values());
  const nodes = view.entities.map((e) => ({
    id: e.name,
    label: e.name,
    type: e.type,
    description: e.description,
    level: level.get(e.name) ?? farthest + 1,
    days: e.doc_keys.length,
  }));
  if (!known.has(view.center)) {
    nodes.unshift({ id: view.center, label: view.center, type: "", description: "", level: 0, days: 0 });
  }
  return { nodes, edges };
}

const TYPE_COLOURS: Record<string, string> = {
  person: "#1f5fd6",
  location: "#1e7a3c",
  organization: "#8a4baf",
  event: "#c05a00",
  date: "#5b616e",
  artifact: "#a1237a",
};

/** The colour a node of this entity type is drawn in. */
export function typeColour(type: string): string {
  return TYPE_COLOURS[type.toLowerCase()] ?? "#3d4452";
}
