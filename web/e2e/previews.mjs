// End-to-end over the evidence panel's page previews: Debian's chromium, driven by
// playwright-core, against a running `varagity up` whose corpus holds a text PDF, a
// PowerPoint deck and a second PDF, all indexed.
//
//   VARAGITY_URL=http://127.0.0.1:8000 E2E_OUT=/tmp/shots \
//   E2E_PDF=report.pdf E2E_PDF_QUESTION="How much silt did the dredging remove?" \
//   E2E_DECK=deck.pptx E2E_DECK_QUESTION="How much did quarterly tonnage rise?" \
//   E2E_GONE=notice.pdf E2E_GONE_PATH=/corpus/notes/notice.pdf \
//   E2E_GONE_QUESTION="When does Aurora station log its first sensor sweep?" node e2e/previews.mjs
//
// For each question: the answer's evidence card of the named file shows its page beside
// the passage, highlighted (for the PDF, the sentence the answer quotes, not the whole
// passage); the page opens in a dialog and zooms. Then E2E_GONE_PATH is
// deleted and the conversation reloaded: that card falls back to the passage's text
// with the reason. Any console error fails the run. Screenshots and report.json go to
// E2E_OUT.
import assert from "node:assert/strict";
import { unlinkSync } from "node:fs";

import { required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/previews.mjs";
const BASE = required("VARAGITY_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const PDF = required("E2E_PDF", SCRIPT);
const PDF_QUESTION = required("E2E_PDF_QUESTION", SCRIPT);
const DECK = required("E2E_DECK", SCRIPT);
const DECK_QUESTION = required("E2E_DECK_QUESTION", SCRIPT);
const GONE = required("E2E_GONE", SCRIPT);
const GONE_PATH = required("E2E_GONE_PATH", SCRIPT);
const GONE_QUESTION = required("E2E_GONE_QUESTION", SCRIPT);
// a model answer on 2 shared cores; a deck's first conversion by LibreOffice
const ANSWER_TIMEOUT = 180_000;
const PREVIEW_TIMEOUT = 120_000;

/** @type {Record<string, unknown>} */
const report = {};

/**
 * Asks `question` in a new conversation and waits for the finished answer.
 * @param {import("playwright-core").Page} page
 * @param {string} question
 */
async function ask(page, question) {
  await page.goto(`${BASE}/`);
  const box = page.getByLabel("Question", { exact: true });
  await box.fill(question);
  await box.press("Enter");
  await waitForAnswer(page);
}

/** @param {import("playwright-core").Page} page */
async function waitForAnswer(page) {
  await page.waitForFunction(
    () => {
      const status = document.querySelector(".turn")?.getAttribute("data-status");
      return status != null && status !== "retrieving" && status !== "answering";
    },
    undefined,
    { timeout: ANSWER_TIMEOUT },
  );
  const status = await page.locator(".turn").first().getAttribute("data-status");
  assert.equal(status, "done", `the answer ended ${status}`);
}

/**
 * The evidence card of the file named `name`.
 * @param {import("playwright-core").Page} page
 * @param {string} name
 */
async function card(page, name) {
  const source = page.locator(".evidence .source").filter({ has: page.locator("h3", { hasText: name }) });
  const titles = await page.locator(".evidence .source h3").allInnerTexts();
  assert.ok((await source.count()) > 0, `${name} is not among the sources: ${titles.join(" | ")}`);
  return source.first();
}

/**
 * Waits for the card's page image to be loaded; returns what it shows.
 * @param {import("playwright-core").Locator} source
 */
async function shownPage(source) {
  const figure = source.locator(".page-preview");
  const note = source.locator(".page-unavailable");
  await figure.or(note).waitFor({ timeout: PREVIEW_TIMEOUT });
  if (await note.isVisible()) throw new Error(`no page shown: ${await note.innerText()}`);
  const image = figure.locator("img");
  await image.evaluate((element) => {
    const img = /** @type {HTMLImageElement} */ (element);
    if (img.complete && img.naturalWidth > 0) return null;
    return new Promise((resolve, reject) => {
      img.addEventListener("load", resolve, { once: true });
      img.addEventListener("error", () => reject(new Error("the page image failed to load")), { once: true });
    });
  });
  return {
    page: Number(await figure.getAttribute("data-page")),
    caption: await figure.locator("figcaption").innerText(),
    marks: await figure.locator(".page-mark").count(),
    naturalWidth: await image.evaluate((element) => /** @type {HTMLImageElement} */ (element).naturalWidth),
    alt: (await image.getAttribute("alt")) ?? "",
    besideText: await source.locator(".source-body .content").isVisible(),
  };
}

/**
 * What the card quotes of its passage, and how the page preview's highlight compares
 * with the whole passage's (the API's envelope without the quote's span).
 * @param {import("playwright-core").Page} page
 * @param {import("playwright-core").Locator} source
 */
async function quoteVsPassage(page, source) {
  const chunkId = (await source.getAttribute("data-chunk-id")) ?? "";
  const whole = await page.evaluate(async (id) => {
    const response = await fetch(`/api/chunks/${encodeURIComponent(id)}/preview`);
    return /** @type {{highlights: unknown[]}} */ (await response.json()).highlights.length;
  }, chunkId);
  return {
    quoted: await source.locator(".content mark.quote").allInnerTexts(),
    quoteMarks: await source.locator(".page-preview .page-mark").count(),
    passageMarks: whole,
  };
}

/**
 * Opens the card's page in the zoom dialog, zooms in twice and back to fit.
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 * @param {import("playwright-core").Locator} source
 * @param {string} shot
 * @param {string} what
 */
async function zoom(session, page, source, shot, what) {
  await source.locator(".page-thumb").click();
  const dialog = page.locator("dialog.page-zoom-dialog[open]");
  await dialog.waitFor();
  const level = dialog.locator(".page-zoom-tools output");
  assert.equal(await level.innerText(), "100%");
  const frame = dialog.locator(".page-zoom-page");
  const fitted = (await frame.boundingBox())?.width ?? 0;
  await dialog.getByRole("button", { name: "Zoom in" }).click();
  await dialog.getByRole("button", { name: "Zoom in" }).click();
  assert.equal(await level.innerText(), "200%");
  const zoomed = (await frame.boundingBox())?.width ?? 0;
  assert.ok(zoomed > 1.9 * fitted, `zoomed to ${zoomed}px from ${fitted}px`);
  // the dialog scrolled the highlight into view
  const mark = await dialog.locator(".page-mark").first().boundingBox();
  const view = await dialog.locator(".page-zoom-scroll").boundingBox();
  assert.ok(mark && view && mark.y >= view.y - 1 && mark.y <= view.y + view.height, "highlight in view");
  await session.shot(dialog, shot, what);
  await dialog.getByRole("button", { name: "Fit" }).click();
  assert.equal(await level.innerText(), "100%");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "detached" });
  return { fitted, zoomed };
}

await withBrowser(OUT, report, async (session) => {
  const page = await session.page();

  await ask(page, PDF_QUESTION);
  const pdf = await card(page, PDF);
  report.pdf = await shownPage(pdf);
  report.pdfQuote = await quoteVsPassage(page, pdf);
  await pdf.scrollIntoViewIfNeeded();
  await session.shot(pdf, "01-pdf-page", `the ${PDF} passage beside its highlighted page`);
  await session.shot(page, "02-pdf-answer", "the answer and its evidence with page previews");
  report.pdfZoom = await zoom(session, page, pdf, "03-pdf-zoomed", "the PDF page zoomed to 200%");

  await ask(page, DECK_QUESTION);
  const deck = await card(page, DECK);
  report.deck = await shownPage(deck);
  await deck.scrollIntoViewIfNeeded();
  await session.shot(deck, "04-deck-slide", `the ${DECK} passage beside its highlighted slide`);
  report.deckZoom = await zoom(session, page, deck, "05-deck-zoomed", "the slide zoomed to 200%");

  await ask(page, GONE_QUESTION);
  const before = await card(page, GONE);
  report.goneBefore = await shownPage(before);
  report.conversationUrl = new URL(page.url()).hash;
  // the file disappears after indexing; the reloaded answer still has its evidence
  unlinkSync(GONE_PATH);
  await page.reload();
  await waitForAnswer(page);
  const after = await card(page, GONE);
  const note = after.locator(".page-unavailable");
  await note.waitFor({ timeout: PREVIEW_TIMEOUT });
  report.goneReason = await note.getAttribute("data-reason");
  report.goneNote = await note.innerText();
  report.goneText = await after.locator(".content").innerText();
  assert.equal(await after.locator(".page-preview").count(), 0, "no page for a deleted file");
  await after.scrollIntoViewIfNeeded();
  await session.shot(after, "06-deleted-fallback", `${GONE} deleted after indexing: the text, and why`);
});
