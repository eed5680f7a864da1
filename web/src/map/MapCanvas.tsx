/**
 * The codebase map drawn with Cytoscape.js (loaded on first use, like the entity graph:
 * its own chunk, never downloaded by the chat). Groups are compound nodes holding their
 * cards at fixed positions; pan and zoom are Cytoscape's. A tap on a card selects it:
 * the card and what runs downstream of it are lit, the rest dims, and the view fits the
 * lit part. A tap on the background clears the spotlight.
 */
import { useEffect, useRef } from "react";

import { useCytoscape } from "../shared/useCytoscape";

import { CARD_HEIGHT, CARD_WIDTH, downstreamOf, mapElements, type CodebaseMap } from "./model";

interface MapCanvasProps {
  map: CodebaseMap;
  selected: string | null;
  onSelect: (card: string | null) => void;
}

const FIT_PADDING = 30;

export function MapCanvas({ map, selected, onSelect }: MapCanvasProps) {
  const container = useRef<HTMLDivElement>(null);
  const select = useRef(onSelect);
  useEffect(() => {
    select.current = onSelect;
  }, [onSelect]);

  const { cy, error } = useCytoscape(
    container,
    {
      options: {
        elements: mapElements(map),
        layout: { name: "preset", fit: true, padding: FIT_PADDING },
        style: [
          {
            selector: "node.card",
            style: {
              shape: "round-rectangle",
              width: CARD_WIDTH,
              height: CARD_HEIGHT,
              "background-color": "#ffffff",
              "border-width": 2,
              "border-color": "data(colour)",
              label: "data(label)",
              "text-wrap": "wrap",
              "text-max-width": `${CARD_WIDTH - 14}px`,
              "text-valign": "center",
              "text-halign": "center",
              "font-size": 16,
              "font-weight": 600,
              "line-height": 1.15,
              color: "#1b1d21",
            },
          },
          {
            selector: "node.group",
            style: {
              shape: "round-rectangle",
              "background-color": "#eef1f6",
              "background-opacity": 0.7,
              "border-width": 1,
              "border-color": "#b8bec8",
              label: "data(label)",
              "text-valign": "top",
              "text-halign": "center",
              "text-margin-y": -8,
              "font-size": 22,
              "font-weight": "bold",
              color: "#1b1d21",
              padding: "18px",
            },
          },
          {
            selector: "edge",
            style: {
              width: 1.2,
              "line-color": "#aab1bd",
              "target-arrow-shape": "triangle",
              "target-arrow-color": "#aab1bd",
              "arrow-scale": 0.9,
              "curve-style": "bezier",
              label: "data(label)",
              "font-size": 9,
              // edge labels only when zoomed in far enough to read them, or lit
              "min-zoomed-font-size": 12,
              "text-rotation": "autorotate",
              "text-background-color": "#ffffff",
              "text-background-opacity": 0.85,
              "text-background-padding": "1px",
              color: "#3f4451",
            },
          },
          { selector: ".dimmed", style: { opacity: 0.18 } },
          { selector: "edge.dimmed", style: { opacity: 0.07 } },
          {
            selector: "node.card.downstream",
            style: { "background-color": "#fff4cc", "border-width": 3 },
          },
          {
            selector: "node.card.chosen",
            style: { "background-color": "#e6eefc", "border-width": 4, "border-color": "#0b57d0" },
          },
          {
            selector: "edge.lit",
            style: {
              width: 2,
              "line-color": "#1f5fd6",
              "target-arrow-color": "#1f5fd6",
              "font-size": 11,
              "min-zoomed-font-size": 7,
              "z-index": 10,
            },
          },
        ],
        minZoom: 0.2,
        maxZoom: 2.5,
        autoungrabify: true,
        boxSelectionEnabled: false,
      },
      published: ".card",
      wire: (drawn) => {
        drawn.on("tap", "node.card", (event) => select.current(String(event.target.id())));
        drawn.on("tap", (event) => {
          if (event.target === drawn) select.current(null);
        });
      },
      // a resized canvas (the window, the side panel folding under) fits again what is shown
      refit: (drawn) => {
        const lit = drawn.nodes(".chosen, .downstream");
        drawn.fit(lit.empty() ? undefined : lit, FIT_PADDING);
      },
      what: "map view",
    },
    [map],
  );

  // the spotlight: the chosen card and what runs downstream of it lit, the rest dimmed
  useEffect(() => {
    if (cy === null) return;
    const chosen = selected === null ? null : cy.getElementById(selected);
    cy.batch(() => {
      cy.elements().removeClass("dimmed downstream chosen lit");
      if (chosen === null || chosen.empty()) return;
      const down = downstreamOf(map, selected as string);
      const lit = new Set([selected as string, ...down]);
      cy.nodes(".card").forEach((n) => {
        if (n.id() === selected) n.addClass("chosen");
        else if (down.has(n.id())) n.addClass("downstream");
        else n.addClass("dimmed");
      });
      cy.edges().forEach((e) => {
        e.addClass(lit.has(e.source().id()) && lit.has(e.target().id()) ? "lit" : "dimmed");
      });
    });
    const shown = chosen === null || chosen.empty() ? cy.elements() : cy.nodes(".chosen, .downstream");
    const still = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches ?? false;
    cy.stop();
    cy.animate({ fit: { eles: shown, padding: FIT_PADDING } }, { duration: still ? 0 : 250 });
  }, [map, selected, cy]);

  return (
    <>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div
        ref={container}
        className="map-canvas"
        role="img"
        aria-label="The codebase map: the system's parts as cards in their groups, with arrows to what each uses"
        data-selected={selected ?? ""}
      />
    </>
  );
}
