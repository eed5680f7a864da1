/**
 * A Cytoscape.js drawing in a container, for the graph and map screens: the library is
 * loaded on first use (its own chunk, never downloaded by the chat), the drawing is
 * made again when `deps` change and destroyed with the component, a resized container
 * fits it again, and the container carries `data-ready` and `data-nodes` (where each
 * published node is drawn, in pixels inside it) for tests that click one.
 */
import { useEffect, useRef, useState, type DependencyList, type RefObject } from "react";
import type { Core, CytoscapeOptions } from "cytoscape";

export interface CytoscapeSetup {
  /** Everything but the container. */
  options: Omit<CytoscapeOptions, "container">;
  /** The nodes whose drawn positions `data-nodes` lists (a selector). */
  published: string;
  /** Event handlers, once the drawing exists. */
  wire: (cy: Core) => void;
  /** How the drawing fits a resized container. */
  refit: (cy: Core) => void;
  /** What the drawing is, for the error shown when the library cannot load. */
  what: string;
}

export function useCytoscape(
  container: RefObject<HTMLDivElement | null>,
  setup: CytoscapeSetup,
  deps: DependencyList,
): { cy: Core | null; error: string | null } {
  const latest = useRef(setup);
  latest.current = setup;
  const [cy, setCy] = useState<Core | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const el = container.current;
    if (el === null) return;
    const { options, published, wire, refit, what } = latest.current;
    let destroyed = false;
    let destroy = () => {};
    import("cytoscape").then(
      ({ default: cytoscape }) => {
        if (destroyed) return;
        const drawn = cytoscape({ ...options, container: el });
        wire(drawn);
        const publish = () =>
          el.setAttribute(
            "data-nodes",
            JSON.stringify(
              drawn.nodes(published).map((n) => ({
                id: n.id(),
                x: Math.round(n.renderedPosition().x),
                y: Math.round(n.renderedPosition().y),
              })),
            ),
          );
        drawn.on("render viewport resize", publish);
        publish();
        const resized = new ResizeObserver(() => {
          drawn.resize();
          refit(drawn);
        });
        resized.observe(el);
        el.setAttribute("data-ready", "true");
        setCy(drawn);
        destroy = () => {
          resized.disconnect();
          drawn.destroy();
        };
      },
      (exc: unknown) => {
        if (!destroyed) setError(`Cannot load the ${what}: ${String(exc)}`);
      },
    );
    return () => {
      destroyed = true;
      el.removeAttribute("data-ready");
      setCy(null);
      destroy();
    };
    // the drawing is made again only when what it draws changes
  }, deps);

  return { cy, error };
}
