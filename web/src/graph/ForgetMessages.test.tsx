// @vitest-environment happy-dom
/**
 * Forgetting messages from the transcript view, in a DOM (happy-dom) against a recording
 * `fetch`: each action asks first (Cancel sends nothing), confirming sends the DELETE the
 * API names (a day: the range of that day in that thread; the thread: its id, URL-encoded)
 * and shows the receipt and refreshes the graph; a refusal (409) shows the API's message.
 */
import { act } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { ForgetReceipt, GraphDay } from "../api/types";
import { $, button, click, rootPerTest } from "../test/dom";
import { GraphExplorer } from "./GraphExplorer";
import { splitDocKey } from "./ForgetMessages";

const THREAD = "iMessage;-;kim@example.com";
const DOC_KEY = `${THREAD}::2026-03-02`;

const DAY: GraphDay = {
  doc_key: DOC_KEY,
  thread_name: "kim",
  span: "2026-03-02 09:00\u201309:05",
  source: "phone/chat.db",
  status: "processed",
  message_guids: ["GUID-0", "GUID-1"],
  text: "[09:00] kim: The vault code is Zephyrquill7731\n[09:05] Me: Got it",
};

const RECEIPT: ForgetReceipt = {
  forget_id: "9a1b2c3d4e5f60718293a4b5c6d7e8f9",
  kind: "messages",
  target: `${THREAD} 2026-03-02..2026-03-02`,
  forgotten_at: "2026-03-10T09:00:00Z",
  verified: true,
  stores: [
    {
      store: "graph_days",
      label: "Transcript days (graph engine)",
      removed: 1,
      remaining: 0,
      updated: 0,
      verified: true,
      note: null,
    },
  ],
  backups: [],
  notes: [
    "2 message(s) matched; the archives keep them (they are never written) and every later build leaves them out",
  ],
};

type Answer = { status: number; body: unknown };

const page = rootPerTest();
let asked: string[];
let forgetAnswer: Answer;

beforeEach(() => {
  asked = [];
  forgetAnswer = { status: 200, body: RECEIPT };
  vi.stubGlobal("fetch", (url: string, init: RequestInit) => {
    const method = init.method ?? "GET";
    asked.push(`${method} ${url}`);
    let answer: Answer;
    if (method === "DELETE") answer = forgetAnswer;
    else if (url.startsWith("/api/graph/entities"))
      answer = { status: 200, body: { entities: [], total: 0 } };
    else if (url.startsWith("/api/graph/days/")) answer = { status: 200, body: DAY };
    else answer = { status: 404, body: { code: "not_found", message: `no ${url}` } };
    return Promise.resolve(
      new Response(JSON.stringify(answer.body), {
        status: answer.status,
        headers: { "content-type": "application/json" },
      }),
    );
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

/** The explorer with the day open; what it asked of its parent is recorded. */
async function explorer() {
  const calls = { days: [] as (string | null)[], forgotten: 0 };
  await act(async () =>
    page.root.render(
      <GraphExplorer
        entity={null}
        day={DOC_KEY}
        version={0}
        onEntity={() => {}}
        onDay={(key) => calls.days.push(key)}
        onForgotten={() => {
          calls.forgotten += 1;
        }}
      />,
    ),
  );
  expect($("pre.transcript")?.textContent).toContain("Zephyrquill7731");
  return calls;
}

const deletes = () => asked.filter((a) => a.startsWith("DELETE"));

describe("forgetting messages from the transcript", () => {
  it("splits a doc_key at its last '::'", () => {
    expect(splitDocKey(DOC_KEY)).toEqual({ threadId: THREAD, day: "2026-03-02" });
  });

  it("asks first: Cancel sends nothing", async () => {
    const calls = await explorer();
    const dialog = $<HTMLDialogElement>("dialog.confirm");
    expect(dialog?.open).toBe(false);

    await click(button("Forget this day's messages"));
    expect(dialog?.open).toBe(true);
    expect($("#confirm-title")?.textContent).toBe("Forget kim on 2026-03-02?");
    expect(dialog?.textContent).toContain("The archive file keeps the messages");
    expect(dialog?.textContent).toContain("every later build leave");
    expect(document.activeElement).toBe(button("Cancel"));

    await click(button("Cancel"));
    expect(dialog?.open).toBe(false);
    expect(deletes()).toEqual([]);
    expect(calls.forgotten).toBe(0);
  });

  it("forgets the day: the range of that day in that thread, then the receipt and a refresh", async () => {
    const calls = await explorer();
    await click(button("Forget this day's messages"));
    await click(button("Forget"));

    expect(deletes()).toEqual([
      "DELETE /api/graph/messages?from=2026-03-02&to=2026-03-02&thread_id=iMessage%3B-%3Bkim%40example.com",
    ]);
    const notice = $('.notice[role="status"]');
    expect(notice?.textContent).toContain("Forgot the messages of kim on 2026-03-02.");
    expect(notice?.querySelector('[aria-label="Deletion receipt"]')?.textContent).toContain(
      "Verified gone from every store.",
    );
    expect(notice?.textContent).toContain("Transcript days (graph engine)");
    expect(calls.days).toEqual([null]); // the day is closed
    expect(calls.forgotten).toBe(1);
  });

  it("forgets the whole thread by its URL-encoded id", async () => {
    const calls = await explorer();
    await click(button("Forget this whole thread"));
    expect($("#confirm-title")?.textContent).toBe("Forget the whole thread kim?");
    await click(button("Forget"));

    expect(deletes()).toEqual(["DELETE /api/graph/messages/threads/iMessage%3B-%3Bkim%40example.com"]);
    expect($('.notice[role="status"]')?.textContent).toContain("Forgot every message of kim.");
    expect(calls.forgotten).toBe(1);
  });

  it("shows the API's message when the graph is busy (409), and no receipt", async () => {
    forgetAnswer = {
      status: 409,
      body: {
        code: "corpus_busy",
        message:
          "the graph corpus is busy: a graph build (run 1a2b) holds it; try again once it has finished",
      },
    };
    const calls = await explorer();
    await click(button("Forget this whole thread"));
    await click(button("Forget"));

    expect(deletes()).toHaveLength(1);
    expect($('[role="alert"]')?.textContent).toBe(
      "Forgetting every message of kim failed: the graph corpus is busy: a graph build (run 1a2b) holds it; " +
        "try again once it has finished",
    );
    expect($('[aria-label="Deletion receipt"]')).toBeNull();
    expect(calls.forgotten).toBe(0);
    expect(calls.days).toEqual([]);
  });
});
