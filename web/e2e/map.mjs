// The codebase map, the ⌘K palette and developer mode in Debian's chromium, driven by
// playwright-core, against a running `varagity up` that serves the build. With
// E2E_WITHOUT_DAGSTER=1 it runs against the API alone (embedded Postgres, no model
// servers, no Dagster): the corpus screen's list of backup runs then answers 503, which
// is expected; nothing else here needs Dagster or a model.
//
//   VARAGITY_URL=http://127.0.0.1:8000 E2E_OUT=/tmp/shots E2E_DOCUMENT=manuals/kettle.md \
//   node e2e/map.mjs
//
// The Map entry in the header (developer mode is on by default); `#/map` drawn by
// Cytoscape with its groups; a card clicked on the canvas spotlights what runs downstream
// of it and shows its source line; Ctrl-K opens the palette, the document E2E_DOCUMENT
// (a path in the corpus) is found by its file name and Enter opens it in the corpus tree;
// developer mode switched off from the palette hides the Map entry (kept across a
// reload) while `#/map` still works by its address; the map at 375px. Any console error
// fails the run. Screenshots and report.json go to E2E_OUT: map.png and palette.png
// among them.
import assert from "node:assert/strict";

import { assertFits, required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/map.mjs";
const BASE = required("VARAGITY_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const DOCUMENT = required("E2E_DOCUMENT", SCRIPT);
const FILE_NAME = DOCUMENT.slice(DOCUMENT.lastIndexOf("/") + 1);
/** A card whose spotlight is small enough to read: reranked and what it composes. */
const CARD = "reranked";
const WITHOUT_DAGSTER = process.env.E2E_WITHOUT_DAGSTER === "1";

/** @type {Record<string, unknown>} */
const report = { document: DOCUMENT, withoutDagster: WITHOUT_DAGSTER };

/**
 * Where Cytoscape drew each card, in pixels inside the canvas.
 * @param {import("playwright-core").Page} page
 * @returns {Promise<{ id: string, x: number, y: number }[]>}
 */
async function drawnCards(page) {
  return JSON.parse((await page.locator(".map-canvas").getAttribute("data-nodes")) ?? "[]");
}

/** @param {import("playwright-core").Page} page */
function screenLinks(page) {
  return page.getByRole("navigation", { name: "Screens" }).getByRole("link").allInnerTexts();
}

/** @param {import("playwright-core").Page} page */
async function openPalette(page) {
  await page.keyboard.press("Control+K");
  const input = page.locator("dialog.palette[open] input[role=combobox]");
  await input.waitFor();
  await page.waitForFunction(
    () => !document.querySelector(".palette-status")?.textContent?.includes("still reading"),
  );
  return input;
}

/** @param {import("./browser.mjs").Session} session */
async function map(session) {
  const page = await session.page();
  await page.goto(`${BASE}/#/`);
  report.screens = await screenLinks(page);
  assert.deepEqual(report.screens, ["Chat", "Corpus", "Graph", "Map"]);
  await page.getByRole("link", { name: "Map" }).click();
  const canvas = page.locator('.map-canvas[data-ready="true"]');
  await canvas.waitFor({ timeout: 60_000 });
  await page.locator(".map-canvas canvas").first().waitFor();
  const cards = await drawnCards(page);
  report.cards = cards.length;
  assert.ok(cards.length >= 35, `only ${cards.length} cards drawn`);
  assert.equal(new URL(page.url()).hash, "#/map");
  await session.shot(page, "map", "the codebase map: cards in their groups, drawn by Cytoscape");

  // click a card on the canvas: it and what runs downstream of it are lit, the rest dims
  await canvas.scrollIntoViewIfNeeded();
  await page.evaluate(
    () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(null)))),
  );
  const box = await canvas.boundingBox();
  const card = cards.find((c) => c.id === CARD);
  assert.ok(box && card, `no ${CARD} card drawn`);
  await page.mouse.click(box.x + card.x, box.y + card.y);
  await page.waitForFunction(
    (id) => document.querySelector(".map-canvas")?.getAttribute("data-selected") === id,
    CARD,
  );
  assert.equal(new URL(page.url()).hash, `#/map?card=${CARD}`);
  const details = page.locator(".map-details");
  report.spotlight = await details.innerText();
  assert.match(String(report.spotlight), /varagity\/retrieval\/reranked\.py:\d+/);
  assert.match(String(report.spotlight), /reranked composes a base retriever/);
  // the fit animation settles before the picture
  await page.waitForTimeout(400);
  await session.shot(page, "map-spotlight", `${CARD} clicked: what runs downstream lit, the rest dimmed`);
  await page.close();
}

/** @param {import("./browser.mjs").Session} session */
async function palette(session) {
  const page = await session.page();
  await page.goto(`${BASE}/#/`);
  await page.getByRole("heading", { name: "Varagity", level: 1 }).waitFor();
  const input = await openPalette(page);
  await input.fill(FILE_NAME);
  const first = page.locator("dialog.palette [role=option]").first();
  await first.waitFor();
  report.paletteFirst = await first.innerText();
  assert.match(String(report.paletteFirst), new RegExp(DOCUMENT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  assert.equal(await first.getAttribute("aria-selected"), "true");
  await session.shot(page, "palette", `the palette (Ctrl-K) finding ${FILE_NAME} by name`);

  if (WITHOUT_DAGSTER) {
    // the corpus screen (twice: here and after the reload) lists its backup runs from Dagster
    for (let i = 0; i < 4; i++) session.expectFailedRequest("/api/backups/rag/runs", 503);
  }
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => !document.querySelector("dialog.palette")?.hasAttribute("open"));
  assert.equal(new URL(page.url()).hash, `#/corpus?${new URLSearchParams({ path: DOCUMENT })}`);
  const row = page.locator("tr.file-row.is-spotlit");
  await row.waitFor({ timeout: 30_000 });
  assert.equal(await row.getAttribute("data-path"), DOCUMENT);
  report.focused = await page.evaluate(() => document.activeElement?.getAttribute("data-path"));
  assert.equal(report.focused, DOCUMENT);
  await session.shot(page, "palette-document", `Enter opened ${DOCUMENT} in the corpus tree`);

  // developer mode off from the palette: no Map entry, kept across a reload; the address still works
  const again = await openPalette(page);
  await again.fill("developer mode");
  await page.locator("dialog.palette [role=option]").first().waitFor();
  assert.match(
    await page.locator("dialog.palette [role=option]").first().innerText(),
    /Turn developer mode off/,
  );
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    () => ![...document.querySelectorAll(".screens a")].some((a) => a.textContent === "Map"),
  );
  await page.reload();
  await page.getByRole("heading", { name: "Varagity", level: 1 }).waitFor();
  report.screensWithoutDeveloperMode = await screenLinks(page);
  assert.deepEqual(report.screensWithoutDeveloperMode, ["Chat", "Corpus", "Graph"]);
  const search = await openPalette(page);
  await search.fill("run_turn");
  report.mapCardsWithoutDeveloperMode = await page.locator("dialog.palette [role=option]").count();
  assert.equal(report.mapCardsWithoutDeveloperMode, 0);
  await page.keyboard.press("Escape");
  await page.goto(`${BASE}/#/map?card=turn-runner`);
  await page
    .locator('.map-canvas[data-ready="true"][data-selected="turn-runner"]')
    .waitFor({ timeout: 60_000 });
  // and back on, from the settings drawer
  await page.getByRole("button", { name: "Settings" }).click();
  await page.locator("#developer-mode").check();
  await page.getByRole("button", { name: "Close settings" }).click();
  assert.deepEqual(await screenLinks(page), ["Chat", "Corpus", "Graph", "Map"]);
  await page.close();
}

/** @param {import("./browser.mjs").Session} session */
async function narrow(session) {
  const page = await session.page();
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(`${BASE}/#/map?card=turn-runner`);
  await page.locator('.map-canvas[data-ready="true"]').waitFor({ timeout: 60_000 });
  await page.waitForTimeout(400);
  await assertFits(page, "the map at 375px");
  await session.shot(page, "map-narrow", "the map at 375px: the details under the canvas");
  await page.close();
}

await withBrowser(OUT, report, async (session) => {
  await map(session);
  await palette(session);
  await narrow(session);
});
