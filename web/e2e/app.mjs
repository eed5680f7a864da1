// End-to-end over the whole app: Debian's chromium, driven by playwright-core, against
// a running `varagity up` (API, Dagster with its folder sensor, model servers).
//
//   VARAGITY_URL=http://127.0.0.1:8000 E2E_OUT=/tmp/shots E2E_UPLOAD=/tmp/velo.txt \
//   E2E_REFUSED=/tmp/tool.exe E2E_QUESTION="How long does the Velo-9 battery last?" node e2e/app.mjs
//
// The corpus screen: the folder tree, a folder's checkbox selecting its documents,
// uploading E2E_UPLOAD (indexed by the sensor: pending -> indexed) with E2E_REFUSED
// refused, and deleting a folder's documents with their files. The chat: a question
// about the upload, its streamed answer and evidence; a reload restores both from the
// URL. The settings drawer: an inline validation error, then a reingest-affecting
// change; the stale banner; its re-ingest with live progress until the banner clears.
// The sidebar: a new group, the conversation moved into it and renamed, the title
// search. Backups: the documents exported (the bundle listed as verified) and restored
// after the confirmation naming what it replaces; search answers the same chunks after.
// The 375px layout. Any console error fails the run. Screenshots and
// report.json go to E2E_OUT; the corpus must hold manuals/kettle.md and
// station/power.md, indexed, with CHUNK_SIZE 1200.
import assert from "node:assert/strict";
import { basename } from "node:path";

import { assertFits, required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/app.mjs";
const BASE = required("VARAGITY_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const UPLOAD = required("E2E_UPLOAD", SCRIPT);
const REFUSED = required("E2E_REFUSED", SCRIPT);
const QUESTION = required("E2E_QUESTION", SCRIPT);
const UPLOADED = basename(UPLOAD);
const GROUP = "Drones";
const TITLE = "Velo-9 battery life";
// the folder sensor, a Dagster run and a model answer on 2 shared cores
const INGEST_TIMEOUT = 240_000;
const ANSWER_TIMEOUT = 180_000;

/** @type {Record<string, unknown>} */
const report = { question: QUESTION, upload: UPLOADED };

/**
 * The status of a file row of the corpus tree, or null while it is not listed.
 * @param {import("playwright-core").Page} page
 * @param {string} path
 */
function rowStatus(page, path) {
  return page.evaluate(
    (p) =>
      document.querySelector(`.file-row[data-path="${CSS.escape(p)}"]`)?.getAttribute("data-status") ?? null,
    path,
  );
}

/**
 * Titles of the evidence panel's sources.
 * @param {import("playwright-core").Page} page
 */
function sourceTitles(page) {
  return page.locator(".evidence .source h3").allInnerTexts();
}

/** @param {import("./browser.mjs").Session} session */
async function corpus(session) {
  const page = await session.page();
  await page.goto(`${BASE}/#/corpus`);
  await page.getByRole("heading", { name: "Corpus", level: 2 }).waitFor();
  await page.locator('.file-row[data-path="manuals/kettle.md"]').waitFor();
  assert.equal(await rowStatus(page, "station/power.md"), "indexed");
  const tree = await page
    .locator(".corpus-tree tbody tr")
    .evaluateAll((rows) =>
      rows.map((r) => `${r.getAttribute("data-path")}:${r.getAttribute("data-status") ?? "folder"}`),
    );
  report.tree = tree;
  assert.ok(tree.includes("manuals/:folder") && tree.includes("station/:folder"), `folders: ${tree}`);
  await session.shot(
    page,
    "01-corpus-tree",
    "corpus screen: folder tree with status, chunks, type, extraction, dates",
  );

  // upload one good file and one the API refuses, through the file input
  await page.getByLabel("Upload files").setInputFiles([UPLOAD, REFUSED]);
  const results = page.locator(".upload-results");
  await results.waitFor();
  const stored = results.locator(`tr[data-name="${UPLOADED}"]`);
  assert.match(await stored.innerText(), /stored/);
  const refused = results.locator(`tr[data-name="${basename(REFUSED)}"]`);
  const refusal = await refused.innerText();
  assert.match(refusal, /refused/);
  assert.match(refusal, /unsupported_type/);
  report.refusal = refusal;

  // the listing shows the upload at once, pending, until the sensor has indexed it
  await page.locator(`.file-row[data-path="${UPLOADED}"]`).waitFor();
  const statuses = [await rowStatus(page, UPLOADED)];
  await session.shot(
    page,
    "02-upload-results",
    "per-file upload results (one refused, with its reason); the upload pending",
  );
  await page.waitForFunction(
    (p) => {
      const status = document
        .querySelector(`.file-row[data-path="${CSS.escape(p)}"]`)
        ?.getAttribute("data-status");
      return status === "indexed";
    },
    UPLOADED,
    { timeout: INGEST_TIMEOUT, polling: 200 },
  );
  statuses.push(await rowStatus(page, UPLOADED));
  report.uploadStatuses = statuses;
  assert.deepEqual(statuses, ["pending", "indexed"]);

  // a folder's checkbox selects everything below it; delete with the files
  await page.getByLabel("Select everything in station/").check();
  assert.ok(await page.getByLabel("Select station/power.md").isChecked());
  assert.equal(
    await page
      .locator(".selection-bar")
      .innerText()
      .then((t) => t.split("\n")[0]),
    "1 selected",
  );
  await page.getByRole("button", { name: "Delete selected\u2026" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete 1 document?" });
  await dialog.waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Cancel");
  await dialog.getByLabel("Also remove the files from the corpus folder").check();
  await session.shot(
    page,
    "03-corpus-delete",
    "deleting a folder's documents, with the option to remove the files",
  );
  await dialog.getByRole("button", { name: "Delete" }).click();
  await page.getByText("Deleted 1 document from the index; removed 1 of 1 files; pruned station.").waitFor();
  await page.locator('.file-row[data-path="station/power.md"]').waitFor({ state: "detached" });
  await page.close();
}

/** @param {import("./browser.mjs").Session} session */
async function chatAndHistory(session) {
  const page = await session.page();
  await page.goto(`${BASE}/`);
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
  const status = await page.locator(".turn").first().getAttribute("data-status");
  assert.equal(
    status,
    "done",
    `the answer ended ${status}: ${await page.locator(".turn").first().innerText()}`,
  );
  const answer = await page.locator(".turn .answer").first().innerText();
  report.answer = answer;
  const titles = await sourceTitles(page);
  report.sources = titles;
  assert.ok(
    titles.some((t) => t.includes(UPLOADED)),
    `the uploaded file is not among the sources: ${titles}`,
  );
  // the saved conversation's address replaced the new chat's
  const url = new URL(page.url());
  assert.match(url.hash, /^#\/c\/[^/]+$/);
  report.conversationUrl = url.hash;
  await page.locator(".sidebar .conversation-link[aria-current=page]").waitFor();
  await session.shot(
    page,
    "04-chat",
    "streamed answer about the uploaded file, sidebar with the new conversation",
  );
  await session.shot(
    page.locator(".evidence"),
    "05-evidence",
    "the evidence panel: searched-for line, rank badges, the upload",
  );

  // a reload restores the conversation and its evidence from the saved snapshots
  await page.reload();
  await page.locator(".turn[data-status=done]").waitFor();
  assert.equal(new URL(page.url()).hash, url.hash);
  const asked = await page.locator(".turn .question").first().innerText();
  assert.ok(asked.endsWith(QUESTION), `the reloaded question reads ${asked}`);
  assert.equal(await page.locator(".searched-for q").innerText(), QUESTION);
  assert.deepEqual(await sourceTitles(page), titles, "the reloaded evidence differs from the live one");
  assert.equal(await page.locator(".turn .answer").first().innerText(), answer);
  await session.shot(
    page,
    "06-history-reloaded",
    "after a reload: the conversation from the URL, with its evidence",
  );
  return page;
}

/**
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 */
async function settingsAndReingest(session, page) {
  const opener = page.getByRole("button", { name: "Settings", exact: true });
  await opener.click();
  const drawer = page.getByRole("dialog", { name: "Settings" });
  await drawer.waitFor();
  // an overlap as large as the chunk passes the field's own bounds; the server refuses it
  await drawer.getByLabel("Chunk overlap", { exact: true }).fill("1200");
  session.expectFailedRequest("/api/settings", 422);
  await drawer.getByRole("button", { name: /^Save/ }).click();
  const overlapError = drawer.locator('[data-setting="CHUNK_OVERLAP"] .field-error');
  await overlapError.waitFor();
  report.settingsError = await overlapError.innerText();
  assert.match(String(report.settingsError), /must be smaller than CHUNK_SIZE/);
  assert.equal(
    await drawer.getByLabel("Chunk overlap", { exact: true }).getAttribute("aria-invalid"),
    "true",
  );
  // focus moved to the first setting at fault
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-invalid")), "true");
  await drawer.locator('[data-setting="CHUNK_SIZE"] .field-error').waitFor();
  await session.shot(
    page,
    "07-settings-error",
    "settings drawer: the server's validation error next to each field",
  );

  await drawer.getByLabel("Chunk overlap", { exact: true }).fill("200");
  await drawer.getByLabel("Chunk size", { exact: true }).fill("600");
  await drawer.getByRole("button", { name: "Save 1 change" }).click();
  await drawer.getByText("Saved. Changed: CHUNK_SIZE.").waitFor();
  await page.keyboard.press("Escape");
  await drawer.waitFor({ state: "hidden" });
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Settings");

  const banner = page.locator(".stale-banner");
  await banner.waitFor();
  report.stale = await banner.innerText();
  assert.match(String(report.stale), /CHUNK_SIZE/);
  await session.shot(page, "08-stale-banner", "the stale banner after a reingest-affecting change");

  await page.getByRole("link", { name: "Corpus" }).click();
  await banner.getByRole("button", { name: "Re-ingest now" }).click();
  const job = page.locator(".ingest-job");
  await job.locator("progress").waitFor({ timeout: 60_000 });
  await session.shot(
    page,
    "09-ingest-progress",
    "re-ingest launched from the banner: live progress from its event stream",
  );
  await page.locator(".ingest-job.ingest-succeeded").waitFor({ timeout: INGEST_TIMEOUT });
  report.ingest = await job.innerText();
  assert.match(String(report.ingest), /Re-ingest complete/);
  await banner.waitFor({ state: "detached" });
  // every remaining document was rebuilt and is indexed again
  await page.waitForFunction(
    (p) =>
      document.querySelector(`.file-row[data-path="${CSS.escape(p)}"]`)?.getAttribute("data-status") ===
      "indexed",
    UPLOADED,
    { timeout: 30_000 },
  );
  await session.shot(page, "10-ingest-done", "re-ingest complete, the stale banner gone");
}

/**
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 */
async function groups(session, page) {
  await page.getByRole("link", { name: "Chat", exact: true }).click();
  await page.locator(".turn[data-status=done]").waitFor();
  const sidebar = page.getByRole("navigation", { name: "Conversations" });
  await sidebar.getByRole("button", { name: "New group" }).click();
  await sidebar.getByLabel("Name of the new group").fill(GROUP);
  await sidebar.getByRole("button", { name: "Create group" }).click();
  await sidebar.locator(`[data-group="${GROUP}"]`).waitFor();

  const id = decodeURIComponent(String(report.conversationUrl).replace("#/c/", ""));
  const row = sidebar.locator(`.conversation[data-conversation-id="${id}"]`);
  await row.locator("summary").click();
  await row.getByLabel("Move to group").selectOption({ label: GROUP });
  const moved = sidebar.locator(`[data-group="${GROUP}"] .conversation-link[aria-current=page]`);
  await moved.waitFor();
  // rename it from its menu; the title search finds it by the new name only
  await row.locator("summary").click();
  await row.getByRole("button", { name: "Rename" }).click();
  const title = row.getByLabel(/^New title for /);
  await title.fill(TITLE);
  await title.press("Enter");
  await moved.getByText(TITLE).waitFor();
  const search = sidebar.getByLabel("Search conversation titles");
  await search.fill("lentil");
  await sidebar.getByText("No conversation title contains \u201clentil\u201d.").waitFor();
  await search.fill("velo");
  await moved.waitFor();
  await search.fill("");
  report.group = await sidebar.locator(`[data-group="${GROUP}"]`).innerText();
  await session.shot(
    page,
    "11-conversations-group",
    `the conversation renamed and moved into the new group "${GROUP}"`,
  );
}

/**
 * Search over the API from the page (what the chat retrieves from): the results'
 * chunk ids and sources.
 * @param {import("playwright-core").Page} page
 */
function searchIds(page) {
  return page.evaluate(async (query) => {
    const response = await fetch("/api/search", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, method: "hybrid", k: 5 }),
    });
    if (!response.ok) throw new Error(`search answered ${response.status}: ${await response.text()}`);
    const body = await response.json();
    /** @type {{chunk_id: string, relative_path: string}[]} */
    const results = body.results;
    return results.map((r) => `${r.chunk_id} ${r.relative_path}`);
  }, QUESTION);
}

/**
 * Export the documents corpus, see the bundle listed as verified, restore it (after the
 * confirmation naming what is replaced), and search answers as before.
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 */
async function backups(session, page) {
  await page.goto(`${BASE}/#/corpus`);
  const panel = page.locator("section.backups");
  await panel.getByRole("heading", { name: "Backups" }).waitFor();
  const before = await searchIds(page);
  assert.ok(before.length > 0, "search answers before the backup");
  await panel.getByRole("button", { name: "Export", exact: true }).click();
  const run = panel.locator("p[role=status]");
  await run.getByText(/^Export finished: .+\.zip written and verified/).waitFor({ timeout: INGEST_TIMEOUT });
  const exported = await run.innerText();
  const name = /(varagity-rag-\S+\.zip)/.exec(exported)?.[1];
  assert.ok(name, `the export names its bundle: ${exported}`);
  const row = panel.locator(".bundle", { has: page.locator("code", { hasText: name }) });
  await row.waitFor();
  report.bundleRow = await row.innerText();
  assert.match(String(report.bundleRow), /verified/i);
  await session.shot(page, "12-backup-exported", "the documents exported: the bundle listed as verified");

  await row.getByRole("button", { name: "Restore\u2026" }).click();
  const dialog = page.getByRole("dialog", { name: `Restore ${name}?` });
  await dialog.waitFor();
  report.restoreConfirm = await dialog.innerText();
  assert.match(String(report.restoreConfirm), /replaces the documents corpus \(now \d+ documents/);
  await session.shot(page, "13-backup-restore-confirm", "the restore names what it replaces, with counts");
  await dialog.getByRole("button", { name: "Restore", exact: true }).click();
  await run.getByText(`Restore from ${name} finished`).waitFor({ timeout: INGEST_TIMEOUT });
  report.restored = await run.innerText();
  await session.shot(page, "14-backup-restored", "the documents restored from the bundle");
  const after = await searchIds(page);
  report.searchBefore = before;
  report.searchAfter = after;
  assert.deepEqual(after, before, "search answers the same after the restore");
  report.bundle = name;
}

/**
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 */
async function narrow(session, page) {
  await page.setViewportSize({ width: 375, height: 812 });
  const sidebar = page.getByRole("navigation", { name: "Conversations" });
  assert.equal(await sidebar.isVisible(), false, "at 375px the sidebar starts collapsed");
  for (const hash of ["#/corpus", report.conversationUrl]) {
    await page.goto(`${BASE}/${hash}`);
    await page.locator(hash === "#/corpus" ? ".corpus-tree" : ".turn[data-status=done]").waitFor();
    await assertFits(page, String(hash));
  }
  const toggle = page.getByRole("button", { name: "Conversations", exact: true });
  await toggle.click();
  await sidebar.waitFor();
  assert.equal(await toggle.getAttribute("aria-expanded"), "true");
  await session.shot(page, "15-narrow", "375px wide: the sidebar opened from its toggle over the chat");
  await page.keyboard.press("Escape");
  await sidebar.waitFor({ state: "hidden" });
  assert.equal(await page.evaluate(() => document.activeElement?.id), "sidebar-toggle");
}

await withBrowser(OUT, report, async (session) => {
  await corpus(session);
  const page = await chatAndHistory(session);
  await settingsAndReingest(session, page);
  await groups(session, page);
  await backups(session, page);
  await narrow(session, page);
});
