// What both end-to-end scripts share: Debian's chromium with the flags this machine
// needs, screenshots listed in a report, and console errors collected (any one fails).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

// no sandbox as root, and no background network traffic (the network is closed;
// chromium's own requests would be refused and logged)
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * An environment variable the script cannot run without.
 * @param {string} name
 * @param {string} script the file whose header documents it
 */
export function required(name, script) {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (see the header of ${script})`);
  return value;
}

/**
 * Runs `body` in a fresh chromium profile; writes `report` (with its screenshots and
 * the console errors seen) to `out/report.json` whatever happens, and fails the run
 * when any page logged a console error.
 * @param {string} out
 * @param {Record<string, unknown>} report
 * @param {(session: Session) => Promise<void>} body
 */
export async function withBrowser(out, report, body) {
  mkdirSync(out, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "varagity-e2e-"));
  const session = new Session(out);
  report.screenshots = session.screenshots;
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
  });
  session.context = context;
  try {
    await body(session);
    if (session.consoleErrors.length > 0) {
      throw new Error(`console errors:\n${session.consoleErrors.join("\n")}`);
    }
  } finally {
    report.consoleErrors = session.consoleErrors;
    writeFileSync(join(out, "report.json"), JSON.stringify(report, null, 2));
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  console.log(`e2e passed: ${session.screenshots.length} screenshots in ${out}`);
}

export class Session {
  /** @param {string} out */
  constructor(out) {
    this.out = out;
    /** @type {{ path: string, what: string }[]} */
    this.screenshots = [];
    /** @type {string[]} */
    this.consoleErrors = [];
    /** @type {import("playwright-core").BrowserContext | null} */
    this.context = null;
    /** @type {{ path: string, status: number }[]} */
    this.expectedFailures = [];
  }

  /**
   * Chromium logs every 4xx/5xx response as a console error; one answer the test
   * provokes on purpose (a refused settings patch) is not an error of the app.
   * @param {string} path the request's path
   * @param {number} status
   */
  expectFailedRequest(path, status) {
    this.expectedFailures.push({ path, status });
  }

  /** A new page whose console errors and uncaught exceptions are recorded. */
  async page() {
    if (this.context === null) throw new Error("the browser is not running");
    const page = await this.context.newPage();
    page.on("console", (msg) => {
      if (msg.type() !== "error") return;
      const url = msg.location().url || page.url();
      const expected = this.expectedFailures.findIndex(
        (f) => url.endsWith(f.path) && msg.text().includes(`status of ${f.status} `),
      );
      if (expected !== -1) this.expectedFailures.splice(expected, 1);
      else this.consoleErrors.push(`${url}: ${msg.text()}`);
    });
    page.on("pageerror", (err) => this.consoleErrors.push(`${page.url()}: uncaught ${err.message}`));
    await page.setViewportSize({ width: 1280, height: 900 });
    return page;
  }

  /**
   * Saves a screenshot of the page (or of one element) and lists it in the report.
   * @param {import("playwright-core").Page | import("playwright-core").Locator} target
   * @param {string} name
   * @param {string} what
   */
  async shot(target, name, what) {
    const path = join(this.out, `${name}.png`);
    if ("goto" in target) await target.screenshot({ path, fullPage: true });
    else await target.screenshot({ path });
    this.screenshots.push({ path, what });
    console.log(`screenshot: ${path} (${what})`);
  }
}

/**
 * Fail unless nothing makes the page wider than its viewport; the failure names the
 * elements past the right edge.
 * @param {import("playwright-core").Page} page
 * @param {string} what the page or screen, for the message
 */
export async function assertFits(page, what) {
  const wider = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (wider > 0) {
    const width = page.viewportSize()?.width;
    assert.fail(`${what} is ${wider}px wider than a ${width}px screen: ${await overflowing(page)}`);
  }
}

/**
 * The deepest elements that reach past the viewport's right edge, for a failure message.
 * @param {import("playwright-core").Page} page
 */
function overflowing(page) {
  return page.evaluate(() => {
    // an element a scroller or a clipping box contains does not widen the page; an
    // absolutely positioned one is contained by its positioned ancestor, not its parent
    const clipped = (/** @type {Element} */ el) => {
      /** @type {Element | null} */
      let node = el;
      while (node && node !== document.body) {
        /** @type {string} */
        const position = getComputedStyle(node).position;
        if (position === "fixed") return false;
        /** @type {Element | null} */
        const box =
          position === "absolute" && node instanceof HTMLElement ? node.offsetParent : node.parentElement;
        if (!box || box === document.body) return false;
        if (getComputedStyle(box).overflowX !== "visible") return true;
        node = box;
      }
      return false;
    };
    const past = [...document.querySelectorAll("body *")].filter(
      (el) => el.getBoundingClientRect().right > window.innerWidth + 0.5 && !clipped(el),
    );
    const leaves = past.filter((el) => !past.some((other) => other !== el && el.contains(other)));
    return leaves
      .slice(0, 5)
      .map((el) => {
        const cls = [...el.classList].map((c) => `.${c}`).join("");
        return `${el.tagName.toLowerCase()}${cls} (right ${Math.round(el.getBoundingClientRect().right)}px)`;
      })
      .join(", ");
  });
}
