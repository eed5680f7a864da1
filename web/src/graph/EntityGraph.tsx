/**
 * An entity's neighbourhood drawn with Cytoscape.js (loaded on first use, so the chat
 * never downloads it). Clicking a node re-centres the view on it; the same nodes are
 * listed as buttons for the keyboard and screen readers, since a canvas is neither.
 */
import { useEffect, useRef } from "react";

import { useCytoscape } from "../shared/useCytoscape";

import { typeColour, type GraphElements } from "./elements";

interface EntityGraphProps {
  elements: GraphElements;
  center: string;
  onSelect: (entity: string) => void;
}

export function EntityGraph({ elements, center, onSelect }: EntityGraphProps) {
  const container = useRef<HTMLDivElement>(null);
  const select = useRef(onSelect);
  useEffect(() => {
    select.current = onSelect;
  }, [onSelect]);

  const { error } = useCytoscape(
    container,
    {
      options: {
        elements: [
          ...elements.nodes.map((n) => ({
            data: { ...n, colour: typeColour(n.type), size: n.level === 0 ? 38 : 24 },
          })),
          ...elements.edges.map((e) => ({ data: e })),
        ],
        style: [
          {
            selector: "node",
            style: {
              "background-color": "data(colour)",
              label: "data(label)",
              width: "data(size)",
              height: "data(size)",
              "font-size": 11,
              color: "#1b1d21",
              "text-valign": "bottom",
              "text-margin-y": 4,
              "text-wrap": "ellipsis",
              "text-max-width": "120px",
              "text-background-color": "#ffffff",
              "text-background-opacity": 0.8,
              "text-background-padding": "1px",
            },
          },
          {
            selector: `node[level = 0]`,
            style: { "border-width": 3, "border-color": "#0b57d0", "font-weight": "bold" },
          },
          {
            selector: "edge",
            style: { width: 1.5, "line-color": "#b8bec8", "curve-style": "bezier" },
          },
        ],
        layout: {
          name: "concentric",
          concentric: (node) => 10 - Number(node.data("level")),
          levelWidth: () => 1,
          minNodeSpacing: 36,
          padding: 30,
          animate: false,
        },
        // a neighbourhood of two or three nodes must not be blown up to fill the canvas
        minZoom: 0.3,
        maxZoom: 1.3,
      },
      published: "node",
      wire: (cy) => cy.on("tap", "node", (event) => select.current(String(event.target.id()))),
      // a narrower window (or the side panel folding under) re-fits the drawing
      refit: (cy) => cy.fit(undefined, 30),
      what: "graph view",
    },
    [elements],
  );

  return (
    <div className="entity-graph">
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div
        ref={container}
        className="graph-canvas"
        role="img"
        aria-label={`The entities within reach of ${center} and their relations`}
      />
      <ul className="graph-nodes" aria-label="Entities in this view">
        {elements.nodes.map((n) => (
          <li key={n.id}>
            <button
              type="button"
              className="link-button"
              aria-current={n.id === center ? "true" : undefined}
              onClick={() => onSelect(n.id)}
            >
              <span className="swatch" style={{ background: typeColour(n.type) }} aria-hidden="true" />
              {n.label}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
