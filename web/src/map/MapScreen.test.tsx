import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { MapScreen } from "./MapScreen";
import { CODEBASE_MAP } from "./model";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

describe("MapScreen", () => {
  it("shows the chosen card: its kind, description, source line and relations both ways", () => {
    const page = html(<MapScreen card="reranked" onSelect={() => {}} />);
    const card = CODEBASE_MAP.cards.find((c) => c.id === "reranked");
    expect(page).toContain('<h3 id="map-card-title">reranked</h3>');
    expect(page).toContain(card?.description);
    expect(page).toContain(`<code>varagity/retrieval/reranked.py:${card?.source.line}</code>`);
    expect(page).toContain("Defined as <code>class RerankedRetriever:</code>");
    expect(page).toMatch(
      /<h4>Uses<\/h4>[\s\S]*>hybrid<\/button><span class="muted">: reranked composes a base retriever/,
    );
    expect(page).toMatch(/<h4>Used by<\/h4>[\s\S]*>Retrievers<\/button>/);
    expect(page).toMatch(/\d+ cards run downstream of it/);
    expect(page).toContain('aria-pressed="true"><span class="swatch"');
  });

  it("lists every card as a button by group, and a legend when none is chosen", () => {
    const page = html(<MapScreen card={null} onSelect={() => {}} />);
    for (const group of CODEBASE_MAP.groups) expect(page).toContain(`>${group.label}</h3>`);
    expect(page.match(/aria-pressed="false"/g)).toHaveLength(CODEBASE_MAP.cards.length);
    expect(page).toContain('aria-label="Kinds of card"');
    expect(page).toContain(`${CODEBASE_MAP.cards.length} cards, ${CODEBASE_MAP.edges.length} relations`);
  });

  it("says so when the address names no card", () => {
    expect(html(<MapScreen card="gone" onSelect={() => {}} />)).toContain("No card is called gone.");
  });
});
