// End-to-end: Debian's chromium, driven by playwright-core, against a running API.
//
//   VARAGITY_URL=http://127.0.0.1:8000 E2E_OUT=/tmp/shots node e2e/chat.mjs
//
// Asks a question with the keyboard, waits for the streamed answer and its evidence,
// checks the rank badges, the lineage link and a citation link, stops and retries an
// answer, checks the 375px layout, and (with VARAGITY_FAILING_URL, an API whose model
// server is down) the in-band error with its retry. Any console error fails the run.
// Screenshots and report.json go to E2E_OUT. Tests tests/web/test_e2e.py runs it.
import assert from "node:assert/strict";

import { assertFits, required, withBrowser } from "./browser.mjs";

const SCRIPT = "e2e/chat.mjs";
const BASE = required("VARAGITY_URL", SCRIPT).replace(/\/+$/, "");
const OUT = required("E2E_OUT", SCRIPT);
const FAILING = process.env.VARAGITY_FAILING_URL?.replace(/\/+$/, "");
const QUESTION = process.env.E2E_QUESTION ?? "How long is the warranty of the Tern K2 kettle?";
const EXPECT_FILE = process.env.E2E_EXPECT_FILE;
const DAGSTER = process.env.E2E_DAGSTER_URL?.replace(/\/+$/, "");
const ANSWER_TIMEOUT = 180_000;

/** @type {{ question: string, sources: { title: string, badges: string[], lineage: string | null, context: number }[], [more: string]: unknown }} */
const report = { question: QUESTION, sources: [] };

/**
 * Waits until turn `index` (0-based) is no longer live; returns its status.
 * @param {import("playwright-core").Page} page
 * @param {number} index
 */
async function settled(page, index) {
  const turn = page.locator(".turn").nth(index);
  await page.waitForFunction(
    (i) => {
      const status = document.querySelectorAll(".turn")[i]?.getAttribute("data-status");
      return status != null && status !== "retrieving" && status !== "answering";
    },
    index,
    { timeout: ANSWER_TIMEOUT },
  );
  return turn.getAttribute("data-status");
}

/**
 * @param {import("playwright-core").Page} page
 * @param {number} index
 */
async function errorText(page, index) {
  return (await page.locator(".turn").nth(index).locator('[role="alert"]').allInnerTexts()).join(" ");
}

/**
 * @param {import("playwright-core").Page} page
 * @param {string} question
 */
async function ask(page, question) {
  const box = page.getByLabel("Question", { exact: true });
  await box.fill(question);
  await box.press("Enter");
}

/** @param {import("./browser.mjs").Session} session */
async function chat(session) {
  const page = await session.page();
  await page.goto(`${BASE}/`);
  await page.getByRole("heading", { level: 1, name: "Varagity" }).waitFor();
  await page.waitForFunction(() => !document.querySelector(".health")?.textContent?.startsWith("Checking"));
  report.health = await page.locator(".health").innerText();
  await session.shot(page, "01-chat-empty", "chat screen before the first question, health in the header");

  // keyboard only: the skip link leads to the question box, Enter asks
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to the question box");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "question");
  await page.keyboard.type(QUESTION);
  await page.keyboard.press("Enter");

  // the evidence arrives before the answer finishes streaming
  await page.locator(".evidence .source").first().waitFor({ timeout: ANSWER_TIMEOUT });
  const status = await settled(page, 0);
  assert.equal(status, "done", `first answer ended ${status}: ${await errorText(page, 0)}`);
  const answer = ((await page.locator(".turn .answer").first().textContent()) ?? "").replace(/^Answer: /, "");
  report.answer = answer;
  assert.ok(answer.trim(), "the answer is empty");

  const searched = await page.locator(".searched-for q").innerText();
  assert.equal(searched, QUESTION, "the evidence panel names the query it searched for");
  const sources = page.locator(".evidence .source");
  for (let i = 0; i < (await sources.count()); i++) {
    const card = sources.nth(i);
    const badges = await card
      .locator(".badge")
      .evaluateAll((els) => els.map((el) => el.firstChild?.textContent ?? ""));
    report.sources.push({
      title: await card.locator("h3").innerText(),
      badges,
      lineage: await card.locator("a.lineage").getAttribute("href"),
      context: await card.locator(".context").count(),
    });
    assert.match(badges[0] ?? "", /^(sem|bm25) #\d+$/, `source ${i + 1} starts with an arm rank: ${badges}`);
    assert.ok(
      badges.some((b) => /^fused \d/.test(b)),
      `source ${i + 1} has a fused score: ${badges}`,
    );
  }
  const top = report.sources[0];
  assert.ok(top, "the evidence panel lists no source");
  if (EXPECT_FILE) {
    assert.match(
      top.title,
      new RegExp(`^\\[1\\] ${(EXPECT_FILE.split("/").pop() ?? "").replace(/\./g, "\\.")}`),
    );
    if (DAGSTER) {
      assert.equal(
        top.lineage,
        `${DAGSTER}/assets/indexed_document?view=partitions&partition=${encodeURIComponent(EXPECT_FILE)}`,
      );
    }
  }

  // a citation, operated with the keyboard, focuses and highlights its source
  const citations = page.locator(".turn").first().locator("a.citation");
  const citationTexts = await citations.allInnerTexts();
  report.citations = citationTexts;
  assert.ok(citationTexts[0], `the answer cites nothing: ${answer}`);
  const cited = citationTexts[0].replace(/\D/g, "");
  await citations.first().focus();
  await page.keyboard.press("Enter");
  const focused = await page.evaluate(() => ({
    id: document.activeElement?.id,
    highlighted: document.activeElement?.classList.contains("is-focused"),
  }));
  assert.deepEqual(focused, { id: `source-t1-${cited}`, highlighted: true });
  await session.shot(
    page,
    "02-chat-answer",
    `streamed answer with citation [${cited}] followed to its highlighted source`,
  );

  // stop while the second answer is in flight, then retry it
  await ask(page, "What peak power do the Aurora station wind turbines deliver?");
  await page.getByRole("button", { name: "Stop" }).click();
  assert.equal(await settled(page, 1), "stopped");
  await session.shot(page, "03-chat-stopped", "second answer stopped by the user, with a Retry button");
  await page.locator(".turn").nth(1).getByRole("button", { name: "Retry" }).click();
  const retried = await settled(page, 1);
  assert.equal(retried, "done", `retried answer ended ${retried}: ${await errorText(page, 1)}`);

  // narrow screen: one column, nothing wider than the viewport
  await page.setViewportSize({ width: 375, height: 812 });
  await assertFits(page, "the page");
  await session.shot(page, "04-chat-narrow", "the same conversation at 375px width, evidence below the chat");
  await page.close();
}

/** @param {import("./browser.mjs").Session} session */
async function failure(session) {
  const page = await session.page();
  await page.goto(`${FAILING}/`);
  await ask(page, QUESTION);
  assert.equal(await settled(page, 0), "error");
  const text = await errorText(page, 0);
  assert.match(text, /model_unavailable/);
  report.error = text;
  await session.shot(page, "05-chat-error", "in-band model error shown with a Retry button");
  await page.getByRole("button", { name: "Retry" }).click();
  assert.equal(await settled(page, 0), "error", "the retry ran again and failed again");
  await page.close();
}

await withBrowser(OUT, report, async (session) => {
  await chat(session);
  if (FAILING) await failure(session);
});
