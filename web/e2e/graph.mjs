// End-to-end over the message graph: Debian's chromium, driven by playwright-core,
// against a running `varagity up` (API, Dagster with the graph-sources sensor, the
// packaged model servers) whose GRAPH_DOCS_PATH starts empty.
//
//   VARAGITY_URL=http://127.0.0.1:8000 E2E_OUT=/tmp/shots \
//   E2E_ARCHIVE=/tmp/a/chat.db:/tmp/a/chat.db-wal:/tmp/a/chat.db-shm E2E_REFUSED=/tmp/a/notes.txt \
//   E2E_QUESTION="When is the flight to Lisbon?" node e2e/graph.mjs
//
// The Graph screen: upload the archive (its database with -wal and -shm, which the
// API stores) and E2E_REFUSED (refused with its reason); its build, launched by the
// upload, followed live (days processed N/M) until it finishes. The chat: Messages
// chosen in the composer, a question about the archive, its answer with day cards and
// the day-grain footer; a reload keeps the choice and restores the evidence. The
// entity graph: the most connected entity's neighbourhood, a node clicked (the view
// re-centres on it), one of its days drilled into (the transcript); the 375px layout.
// Any console error fails the run. Screenshots and report.json go to E2E_OUT.
import assert from "node:assert/strict";
import { basename, delimiter } from "node:path";

import { assertFits, required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/graph.mjs";
const BASE = required("VARAGITY_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const ARCHIVE = required("E2E_ARCHIVE", SCRIPT).split(delimiter);
const REFUSED = required("E2E_REFUSED", SCRIPT);
const QUESTION = required("E2E_QUESTION", SCRIPT);
// extraction with the packaged 0.5B model on 2 shared cores: minutes per thread-day
const BUILD_TIMEOUT = 1_500_000;
const ANSWER_TIMEOUT = 240_000;

/** @type {Record<string, unknown>} */
const report = { question: QUESTION, archive: ARCHIVE.map((p) => basename(p)) };

/** @param {import("./browser.mjs").Session} session */
async function uploadAndBuild(session) {
  const page = await session.page();
  await page.goto(`${BASE}/#/graph`);
  await page.getByRole("heading", { name: "Message graph", level: 2 }).waitFor();
  await page.getByText("No archive yet").waitFor();
  report.statusBefore = await page.locator(".corpus-counts").innerText();
  await session.shot(page, "01-graph-empty", "the Graph screen before any archive: status, upload, builds");

  await page.getByLabel("Upload an archive").setInputFiles([...ARCHIVE, REFUSED]);
  const results = page.locator(".upload-results");
  await results.waitFor();
  for (const path of ARCHIVE) {
    assert.match(await results.locator(`tr[data-name="${basename(path)}"]`).innerText(), /stored/);
  }
  const refusal = await results.locator(`tr[data-name="${basename(REFUSED)}"]`).innerText();
  assert.match(refusal, /refused/);
  report.refusal = refusal;
  await page.locator('.graph-source-table tr[data-path="chat.db"]').waitFor();
  await session.shot(
    page,
    "02-upload-results",
    "upload: the archive stored, the text file refused with its reason",
  );

  // follow the builds (the upload's, or the sensor's) until none is left: record every
  // progress line the followed build shows
  const build = page.locator(".graph-build");
  const live = page.locator('.graph-build-table tr:is([data-state="queued"], [data-state="running"])');
  /** @type {string[]} */
  const progress = [];
  let shotProgress = false;
  const deadline = Date.now() + BUILD_TIMEOUT;
  for (;;) {
    // the line and the state are read in one look: read apart, a build that ends between
    // the two reads would be seen ended with its last running line
    const look =
      (await build.count()) > 0
        ? await build.first().evaluate((el) => ({
            line: (el.querySelector("p")?.textContent ?? "").trim(),
            state: el.className,
          }))
        : { line: "", state: "" };
    const line = look.line;
    if (line && progress.at(-1) !== line) progress.push(line);
    if (!shotProgress && /[1-9]\d* of \d+ days? processed/.test(line) && /running/.test(line)) {
      await session.shot(page, "03-build-progress", `the build followed live: ${line}`);
      shotProgress = true;
    }
    const ended = /build-(succeeded|failed|canceled)/.test(look.state);
    if (ended && (await live.count()) === 0) break;
    assert.ok(Date.now() < deadline, `the build did not finish: ${progress.join(" | ")}`);
    await page.waitForTimeout(1000);
  }
  report.progress = progress;
  report.builds = await page
    .locator(".graph-build-table tbody tr")
    .evaluateAll((rows) => rows.map((r) => `${r.getAttribute("data-state")}: ${r.children[3]?.textContent}`));
  // followed while it was still under way (a build without a model may finish its days
  // between two looks: the days in progress are covered by the component tests)
  assert.ok(
    progress.some((line) => /(queued|running):/.test(line)),
    `the build was not followed before it ended: ${progress.join(" | ")}`,
  );
  assert.ok(
    /** @type {string[]} */ (report.builds).includes("succeeded: 2 of 2 days processed"),
    `no build extracted both days: ${report.builds}`,
  );
  report.buildFinal =
    progress.find((line) => /finished: 2 of 2 days processed/.test(line)) ?? progress.at(-1);
  if (!shotProgress) {
    // no day had finished while the loop looked: keep the last running line's screen
    await session.shot(page, "03-build-progress", `the build's progress: ${report.buildFinal}`);
  }
  // the status and the archive's row are read again once the build is done
  await page.waitForFunction(
    () => /^[1-9]\d* entities/.test(document.querySelector(".corpus-counts")?.textContent ?? ""),
    undefined,
    { timeout: 30_000 },
  );
  await page.waitForFunction(
    () =>
      /2 in 2 threads/.test(
        document.querySelector('.graph-source-table tr[data-path="chat.db"]')?.textContent ?? "",
      ),
    undefined,
    { timeout: 30_000 },
  );
  report.statusAfter = await page.locator(".corpus-counts").innerText();
  await session.shot(
    page,
    "04-build-done",
    "the build finished: entities, relations and days; the archive's days",
  );
  await page.close();
}

/** @param {import("./browser.mjs").Session} session */
async function askTheMessages(session) {
  const page = await session.page();
  await page.goto(`${BASE}/`);
  const messages = page.getByLabel("Messages", { exact: true });
  await messages.check();
  const box = page.getByLabel("Question", { exact: true });
  await box.fill(QUESTION);
  await box.press("Enter");
  await page.waitForFunction(
    () => {
      const status = document.querySelector(".turn")?.getAttribute("data-status");
      return status != null && status !== "retrieving" && status !== "answering";
    },
    undefined,
    { timeout: ANSWER_TIMEOUT },
  );
  const turn = page.locator(".turn").first();
  assert.equal(await turn.getAttribute("data-status"), "done", await turn.innerText());
  report.answer = await page.locator(".turn .answer").first().innerText();
  report.degraded = (await page.locator(".evidence .degraded").count()) > 0;
  const cards = page.locator(".evidence .day-card");
  const keys = await cards.evaluateAll((els) => els.map((el) => el.getAttribute("data-doc-key")));
  report.dayCards = keys;
  assert.ok(keys.length > 0, "the graph answer shows no day card");
  report.dayTitles = await page.locator(".evidence .day-card h3").allInnerTexts();
  report.footer = await page.locator(".evidence .day-grain").innerText();
  assert.match(String(report.footer), /whole conversation day, not a single message/);
  report.findings = await page.locator(".evidence .graph-findings").count();
  const url = new URL(page.url());
  assert.match(url.hash, /^#\/c\/[^/]+$/);
  report.conversationUrl = url.hash;
  // a citation, when the small model wrote one, points at its day card
  const citation = page.locator(".turn .answer a.citation").first();
  if ((await citation.count()) > 0) {
    await citation.click();
    await page.locator(".evidence .day-card.is-focused").waitFor();
    report.citationFollowed = true;
  }
  // tall enough for the whole evidence panel (a sticky column as high as the window):
  // its day cards, the graph's findings and the day-grain footer
  await page.setViewportSize({ width: 1280, height: 1400 });
  await session.shot(
    page,
    "05-chat-messages",
    "a question asked of the messages, answered with day citations",
  );
  await session.shot(
    page.locator(".evidence"),
    "06-day-evidence",
    "the evidence: day cards, what the graph found, the day-grain footer",
  );

  // a reload keeps the choice and restores the evidence from the saved turn
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.reload();
  await page.locator(".turn[data-status=done]").waitFor();
  report.corpusAfterReload = await page.locator('input[name="corpus"]:checked').getAttribute("value");
  const reloaded = await page
    .locator(".evidence .day-card")
    .evaluateAll((els) => els.map((el) => el.getAttribute("data-doc-key")));
  assert.deepEqual(reloaded, keys, "the reloaded day cards differ from the live ones");
  await page.locator(".evidence .day-grain").waitFor();
  await session.shot(page, "07-reloaded", "after a reload: Messages still chosen, the day cards restored");
  await page.close();
}

/**
 * The nodes the graph view drew, with their positions inside the canvas.
 * @param {import("playwright-core").Page} page
 * @returns {Promise<{ id: string, x: number, y: number }[]>}
 */
async function drawnNodes(page) {
  return JSON.parse((await page.locator(".graph-canvas").getAttribute("data-nodes")) ?? "[]");
}

/** @param {import("./browser.mjs").Session} session */
async function entityGraph(session) {
  const page = await session.page();
  await page.goto(`${BASE}/#/graph`);
  const canvas = page.locator('.graph-canvas[data-ready="true"]');
  await canvas.waitFor({ timeout: 60_000 });
  const heading = page.locator("#entity-heading");
  report.firstCenter = await heading.innerText();
  report.entities = await page.locator(".entity-list .entity-pick").allInnerTexts();
  const nodes = await drawnNodes(page);
  report.nodes = nodes.map((n) => n.id);
  const other = nodes.find((n) => n.id !== report.firstCenter);
  assert.ok(other, `the most connected entity has no neighbour drawn: ${JSON.stringify(nodes)}`);
  await page.locator(".graph-canvas canvas").first().waitFor();
  await session.shot(
    page,
    "08-entity-graph",
    `the neighbourhood of ${report.firstCenter}, drawn by Cytoscape`,
  );

  // click the node on the canvas: the view re-centres on it, and the URL names it. The
  // canvas is scrolled into view first, and the click waits for the scroll event (two
  // frames) that makes Cytoscape read its container's new place
  const graph = page.locator(".graph-canvas");
  await graph.scrollIntoViewIfNeeded();
  await page.evaluate(
    () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(null)))),
  );
  const box = await graph.boundingBox();
  assert.ok(box);
  await page.mouse.click(box.x + other.x, box.y + other.y);
  await page.waitForFunction(
    (name) => document.querySelector("#entity-heading")?.textContent === name,
    other.id,
    {
      timeout: 30_000,
    },
  );
  await page.locator('.graph-canvas[data-ready="true"]').waitFor();
  report.recentred = await heading.innerText();
  assert.equal(new URL(page.url()).hash, `#/graph?${new URLSearchParams({ entity: other.id })}`);
  await session.shot(page, "09-recentred", `the view re-centred on ${other.id} after clicking its node`);

  // drill down from the entity to a day it comes from
  const dayLink = page.locator(".day-list button").first();
  await dayLink.waitFor();
  report.transcriptKey = await dayLink.getAttribute("data-doc-key");
  await dayLink.click();
  const transcript = page.locator("pre.transcript");
  await transcript.waitFor({ timeout: 30_000 });
  report.transcript = await transcript.innerText();
  assert.match(String(report.transcript), /\[\d\d:\d\d\] /);
  await page.locator(".transcript-view").scrollIntoViewIfNeeded();
  await session.shot(page, "10-transcript", "drill-down: the conversation day the entity was extracted from");

  await page.setViewportSize({ width: 375, height: 812 });
  await page.locator("pre.transcript").waitFor();
  await assertFits(page, "the Graph screen");
  await session.shot(page, "11-narrow", "375px wide: the Graph screen in one column");
  await page.close();
}

await withBrowser(OUT, report, async (session) => {
  await uploadAndBuild(session);
  await askTheMessages(session);
  await entityGraph(session);
});
