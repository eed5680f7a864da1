import { describe, expect, it } from "vitest";

import type { EvidenceEntity, EvidenceRelation, GraphNeighbourhood } from "../api/types";
import { neighbourhoodElements, typeColour } from "./elements";

const entity = (name: string, type = "person", days = 1): EvidenceEntity => ({
  name,
  type,
  description: `${name}.`,
  doc_keys: Array.from({ length: days }, (_, i) => `k${i}`),
});
const relation = (source: string, target: string): EvidenceRelation => ({
  source,
  target,
  description: `${source} and ${target}`,
  keywords: "trip",
  weight: 1,
  doc_keys: ["k0"],
});

function view(overrides: Partial<GraphNeighbourhood> = {}): GraphNeighbourhood {
  return {
    center: "Maya",
    depth: 2,
    entities: [entity("Maya"), entity("Lisbon", "location", 2), entity("Jonas"), entity("TP218", "artifact")],
    relations: [relation("Maya", "Lisbon"), relation("Jonas", "Lisbon"), relation("Lisbon", "Maya")],
    days: [],
    truncated: false,
    ...overrides,
  };
}

describe("neighbourhoodElements", () => {
  it("places nodes by hops from the centre and keeps one edge per pair", () => {
    const { nodes, edges } = neighbourhoodElements(view());
    const level = Object.fromEntries(nodes.map((n) => [n.id, n.level]));
    // TP218 is listed but no relation reaches it: one ring further out
    expect(level).toEqual({ Maya: 0, Lisbon: 1, Jonas: 2, TP218: 3 });
    expect(edges.map((e) => [e.source, e.target])).toEqual([
      ["Maya", "Lisbon"],
      ["Jonas", "Lisbon"],
    ]);
    expect(nodes.find((n) => n.id === "Lisbon")?.days).toBe(2);
  });

  it("drops relations to entities it cannot place, and self-loops", () => {
    const { edges } = neighbourhoodElements(
      view({ relations: [relation("Maya", "Nowhere"), relation("Maya", "Maya"), relation("Maya", "Jonas")] }),
    );
    expect(edges.map((e) => e.target)).toEqual(["Jonas"]);
  });

  it("draws a centre the entity list lacks", () => {
    const { nodes } = neighbourhoodElements(view({ center: "Sam", entities: [], relations: [] }));
    expect(nodes).toEqual([{ id: "Sam", label: "Sam", type: "", description: "", level: 0, days: 0 }]);
  });

  it("colours nodes by entity type", () => {
    expect(typeColour("PERSON")).toBe(typeColour("person"));
    expect(typeColour("location")).not.toBe(typeColour("person"));
    expect(typeColour("unheard-of")).toMatch(/^#/);
  });
});
