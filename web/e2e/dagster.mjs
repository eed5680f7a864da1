// The Dagster UI through its guarded front (varagity_stack/dagster_front.py), in Debian's
// chromium driven by playwright-core: a person can still use it.
//
//   DAGSTER_URL=http://127.0.0.1:3000 E2E_OUT=/tmp/shots E2E_ASSET=backup_bundle \
//   E2E_PARTITION=rag [E2E_API_KEY=...] [E2E_AWAIT=false] node e2e/dagster.mjs
//
// With E2E_API_KEY, opening the asset page first lands on the front's sign-in page: a
// wrong key is refused there, the right one returns to the asset page. Then, on the asset
// page of E2E_ASSET: "Materialize…", one partition (E2E_PARTITION) picked in the launch
// dialog, "Launch 1 run"; the run's page (its log streams over the UI's websocket) until
// the run succeeds. Then "Materialize…" again, "All" partitions, "Launch backfill"; the
// backfill's page until the backfill has finished. E2E_AWAIT=false stops waiting once
// each launch is confirmed (a webserver without a daemon). report.json names the run and
// the backfill, the websockets the pages opened (with the frames they received) and
// any request the front refused. Console errors of the UI's own origin fail the run;
// those of other hosts (the UI's telemetry script on dagster.io, unreachable offline)
// are listed apart.
import assert from "node:assert/strict";

import { required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/dagster.mjs";
const BASE = required("DAGSTER_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const ASSET = required("E2E_ASSET", SCRIPT);
const PARTITION = required("E2E_PARTITION", SCRIPT);
const KEY = process.env.E2E_API_KEY ?? "";
const AWAIT = process.env.E2E_AWAIT !== "false";
// a Dagster run (the backup of a small corpus) and a backfill of two on 2 shared cores
const RUN_TIMEOUT = 300_000;
const FINISHED = ["COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"];

/** @type {Record<string, any>} */
const report = { asset: ASSET, partition: PARTITION, websockets: [], refused: [], external: [] };

/**
 * A page whose console errors of the UI's own origin fail the run, and whose websockets
 * and refused requests (a JSON body with a `code`, the front's shape) are reported.
 * @param {import("./browser.mjs").Session} session
 */
async function dagsterPage(session) {
  if (session.context === null) throw new Error("the browser is not running");
  const page = await session.context.newPage();
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const url = msg.location().url || page.url();
    if (!url.startsWith(BASE)) {
      report.external.push(`${url}: ${msg.text()}`);
      return;
    }
    const expected = session.expectedFailures.findIndex(
      (f) => new URL(url).pathname === f.path && msg.text().includes(`status of ${f.status} `),
    );
    if (expected !== -1) session.expectedFailures.splice(expected, 1);
    else session.consoleErrors.push(`${url}: ${msg.text()}`);
  });
  page.on("pageerror", (err) => session.consoleErrors.push(`${page.url()}: uncaught ${err.message}`));
  page.on("websocket", (ws) => {
    const entry = { url: ws.url(), framesReceived: 0, framesSent: 0 };
    report.websockets.push(entry);
    ws.on("framereceived", () => (entry.framesReceived += 1));
    ws.on("framesent", () => (entry.framesSent += 1));
  });
  page.on("response", async (response) => {
    if (response.status() < 400 || !response.url().startsWith(BASE)) return;
    const body = await response.text().catch(() => "");
    report.refused.push(
      `${response.status()} ${response.request().method()} ${response.url()}: ${body.slice(0, 200)}`,
    );
  });
  await page.setViewportSize({ width: 1400, height: 900 });
  return page;
}

/**
 * Dagster's first-visit "Join the Dagster community" dialog, when it shows: skipped.
 * @param {import("playwright-core").Page} page
 */
async function skipCommunityDialog(page) {
  const skip = page.getByRole("button", { name: "Skip", exact: true });
  if (await skip.isVisible().catch(() => false)) await skip.click();
}

/**
 * The asset page, ready to launch from.
 * @param {import("playwright-core").Page} page
 */
async function assetPage(page) {
  await page.goto(`${BASE}/assets/${ASSET}`);
  await page.getByRole("button", { name: "Materialize…" }).waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1000); // the community dialog opens a moment later
  await skipCommunityDialog(page);
}

/**
 * The launch dialog of "Materialize…".
 * @param {import("playwright-core").Page} page
 */
async function launchDialog(page) {
  await page.getByRole("button", { name: "Materialize…" }).click();
  const dialog = page.getByRole("dialog").filter({ hasText: `materialize ${ASSET}` });
  await dialog.getByText("Partition selection").waitFor();
  return dialog;
}

/**
 * The id a launch toast's "View" link leads to (`/runs/<id>` or `/runs/b/<id>`), and
 * that page opened.
 * @param {import("playwright-core").Page} page
 * @param {RegExp} toastText
 */
async function followToast(page, toastText) {
  await page.getByText(toastText).waitFor({ timeout: 60_000 });
  const view = page.getByRole("link", { name: "View", exact: true }).last();
  const path = new URL((await view.getAttribute("href")) ?? "/", BASE).pathname;
  await view.click();
  await page.waitForURL((url) => url.pathname === path);
  return path.split("/").pop() ?? "";
}

/**
 * POSTs a GraphQL query as the UI's own page does (same origin, its cookie).
 * @param {import("playwright-core").Page} page
 * @param {string} query
 * @param {Record<string, unknown>} variables
 */
async function graphql(page, query, variables) {
  const body = await page.evaluate(
    async ([q, v]) => {
      const r = await fetch("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: q, variables: v }),
      });
      return r.json();
    },
    [query, variables],
  );
  assert.ok(body.data, JSON.stringify(body));
  return body.data;
}

/**
 * Sign in on the front's page: a wrong key first (refused), then the right one.
 * @param {import("./browser.mjs").Session} session
 * @param {import("playwright-core").Page} page
 */
async function signIn(session, page) {
  await page.goto(`${BASE}/assets/${ASSET}`);
  await page.waitForURL(/\/varagity-login\?next=/);
  report.signInUrl = new URL(page.url()).pathname + new URL(page.url()).search;
  await session.shot(page, "01-sign-in", "the front's sign-in page, asked for the API key");
  session.expectFailedRequest("/varagity-login", 401);
  await page.getByLabel("API key").fill(`${KEY}-wrong`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").waitFor();
  report.wrongKey = await page.getByRole("alert").innerText();
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((url) => url.pathname === `/assets/${ASSET}`);
  const cookies = await session.context?.cookies(BASE);
  report.cookies = (cookies ?? []).map((c) => ({
    name: c.name,
    httpOnly: c.httpOnly,
    sameSite: c.sameSite,
    holdsKey: c.value.includes(KEY),
  }));
}

await withBrowser(OUT, report, async (session) => {
  const page = await dagsterPage(session);
  if (KEY) await signIn(session, page);
  await assetPage(page);
  await session.shot(page, "02-asset", `the asset page of ${ASSET}, through the front`);

  // one partition: one run
  let dialog = await launchDialog(page);
  await dialog.getByText("Select a partition or create one").click();
  // the list's item shows the key twice (its status dot's label and its text)
  const key = PARTITION.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  await page.getByRole("menuitem", { name: new RegExp(`^${key}(\\s+${key})?$`) }).click();
  await dialog.getByText(`Launch runs to materialize ${ASSET}`).click(); // closes the list
  await page.getByRole("menuitem").first().waitFor({ state: "hidden", timeout: 5000 });
  await session.shot(page, "03-partition-dialog", `partition ${PARTITION} picked in the launch dialog`);
  await dialog.getByRole("button", { name: "Launch 1 run" }).click();
  report.runId = await followToast(page, /Launched run/);
  if (AWAIT) {
    await page.getByText("Success", { exact: true }).first().waitFor({ timeout: RUN_TIMEOUT });
  }
  const run = await graphql(
    page,
    "query R($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value } } } }",
    { id: report.runId },
  );
  report.runStatus = run.runOrError.status;
  report.runPartition = run.runOrError.tags.find(
    (/** @type {any} */ t) => t.key === "dagster/partition",
  )?.value;
  await session.shot(
    page,
    "04-run",
    `the run of partition ${PARTITION}, its log streamed over the websocket`,
  );

  // every partition: a backfill
  await assetPage(page);
  dialog = await launchDialog(page);
  await dialog.getByRole("button", { name: "All", exact: true }).click();
  await session.shot(page, "05-backfill-dialog", "all partitions picked: a backfill");
  await dialog.getByRole("button", { name: "Launch backfill" }).click();
  report.backfillId = await followToast(page, /Created backfill/);
  const backfillQuery =
    "query B($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status partitionNames } } }";
  const deadline = Date.now() + RUN_TIMEOUT;
  let backfill = (await graphql(page, backfillQuery, { id: report.backfillId })).partitionBackfillOrError;
  while (AWAIT && !FINISHED.includes(backfill.status)) {
    assert.ok(Date.now() < deadline, `backfill ${report.backfillId} still ${backfill.status}`);
    await page.waitForTimeout(2000);
    backfill = (await graphql(page, backfillQuery, { id: report.backfillId })).partitionBackfillOrError;
  }
  report.backfillStatus = backfill.status;
  report.backfillPartitions = backfill.partitionNames;
  await page.reload();
  await page.getByText(report.backfillId).first().waitFor();
  await session.shot(page, "06-backfill", "the backfill's page");
});
