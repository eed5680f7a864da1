// @vitest-environment happy-dom
/**
 * The palette in a DOM (happy-dom), its lists served by a real HTTP server on loopback
 * in the API's shapes: Ctrl-K opens it, typing a document's name finds it, Enter goes
 * to it (the URL names the document in the corpus tree), Escape closes, the arrows move.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { act, useState } from "react";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import type { ConversationSummary, DocumentList, GraphSourceList } from "../api/types";
import { routeHash } from "../app/route";
import { useRoute } from "../app/useRoute";
import { $, rootPerTest, type } from "../test/dom";
import { documentInfo } from "../test/fixtures";
import { Palette } from "./Palette";

const DOCUMENTS: DocumentList = {
  documents: [documentInfo("manuals/kettle.md"), documentInfo("station/power.md"), documentInfo("soup.txt")],
  counts: { indexed: 3 },
} as DocumentList;
const CONVERSATIONS: ConversationSummary[] = [
  {
    conversation_id: "c1",
    title: "Kettle warranty",
    group_id: null,
    message_count: 2,
    created_at: "2026-03-01T10:00:00Z",
    updated_at: "2026-03-01T10:00:00Z",
  },
];
const SOURCES: GraphSourceList = { sources: [] } as unknown as GraphSourceList;

let server: Server;
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? "");
    const body =
      req.url === "/api/documents"
        ? DOCUMENTS
        : req.url === "/api/conversations"
          ? CONVERSATIONS
          : req.url === "/api/graph/sources"
            ? SOURCES
            : null;
    res.writeHead(body === null ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(body ?? { code: "not_found", message: "no such route" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  // the page is served by the "API", so the client's relative URLs reach it
  (window as unknown as { happyDOM: { setURL: (url: string) => void } }).happyDOM.setURL(
    `http://127.0.0.1:${port}/#/`,
  );
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The app's part that matters here: the route, a screen naming it, and the palette. */
function Harness() {
  const { route, navigate } = useRoute();
  const [open, setOpen] = useState(false);
  const [settingsAt, setSettingsAt] = useState<string | null>(null);
  return (
    <>
      <button type="button" id="opener">
        before
      </button>
      <p id="where">{routeHash(route)}</p>
      <p id="settings">{settingsAt ?? ""}</p>
      <Palette
        open={open}
        onOpenChange={setOpen}
        developerMode
        settings={null}
        graphEnabled
        navigate={navigate}
        openSettings={(name) => setSettingsAt(name ?? "(all)")}
        setDeveloperMode={() => {}}
      />
    </>
  );
}

const page = rootPerTest();

beforeEach(async () => {
  window.location.hash = "#/";
  await act(async () => page.root.render(<Harness />));
});

async function press(target: EventTarget, key: string, init: KeyboardEventInit = {}) {
  await act(async () => {
    target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...init }));
  });
}

/** Wait until `done()` holds, letting React and the server answer in between. */
async function until(done: () => boolean, what: string) {
  for (let i = 0; i < 100; i++) {
    if (done()) return;
    await act(async () => new Promise((resolve) => setTimeout(resolve, 20)));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The palette has read its lists (nothing left in flight to abort). */
const loaded = () => !($(".palette-status")?.textContent ?? "still reading").includes("still reading");
const options = () => [...document.querySelectorAll<HTMLElement>("[role=option]")];
const titles = () => options().map((o) => o.querySelector(".palette-title")?.textContent);

describe("the ⌘K palette", () => {
  it("opens on Ctrl-K, finds a document by name and navigates to it with Enter", async () => {
    await press(window, "k", { ctrlKey: true });
    const dialog = $<HTMLDialogElement>("dialog.palette");
    const input = $<HTMLInputElement>("dialog.palette input[role=combobox]");
    expect(dialog?.open).toBe(true);
    expect(document.activeElement).toBe(input);
    await until(loaded, "the lists");
    expect(asked).toEqual(
      expect.arrayContaining(["/api/documents", "/api/conversations", "/api/graph/sources"]),
    );

    await type(input as HTMLInputElement, "kettle.md");
    expect(titles()[0]).toBe("kettle.md");
    const first = options()[0];
    expect(first?.getAttribute("aria-selected")).toBe("true");
    expect(input?.getAttribute("aria-activedescendant")).toBe(first?.id);
    expect(first?.textContent).toContain("manuals/kettle.md");
    expect(first?.textContent).toContain("Documents");

    await press(input as HTMLInputElement, "Enter");
    expect(window.location.hash).toBe("#/corpus?path=manuals%2Fkettle.md");
    await until(() => $("#where")?.textContent === "#/corpus?path=manuals%2Fkettle.md", "the route");
    expect(dialog?.open).toBe(false);
  });

  it("moves with the arrows, wraps, and opens a conversation or a map card by click", async () => {
    await press(window, "K", { metaKey: true });
    const input = $<HTMLInputElement>("dialog.palette input") as HTMLInputElement;
    await until(() => titles().includes("Kettle warranty"), "the conversations");
    await type(input, "kettle");
    expect(titles().slice(0, 2)).toEqual(["Kettle warranty", "kettle.md"]);
    await press(input, "ArrowDown");
    expect(options()[1]?.getAttribute("aria-selected")).toBe("true");
    await press(input, "ArrowUp");
    await press(input, "ArrowUp");
    expect(options().at(-1)?.getAttribute("aria-selected")).toBe("true");
    await press(input, "ArrowDown");
    await press(input, "Enter");
    expect(window.location.hash).toBe("#/c/c1");

    await press(window, "k", { ctrlKey: true });
    await until(loaded, "the lists");
    const again = $<HTMLInputElement>("dialog.palette input") as HTMLInputElement;
    expect(again.value).toBe(""); // a fresh search each time
    await type(again, "run_turn");
    await act(async () => options()[0]?.click());
    expect(window.location.hash).toBe("#/map?card=turn-runner");
  });

  it("closes on Escape and gives focus back; Ctrl-K again toggles it", async () => {
    $<HTMLButtonElement>("#opener")?.focus();
    await press(window, "k", { ctrlKey: true });
    const dialog = $<HTMLDialogElement>("dialog.palette");
    expect(dialog?.open).toBe(true);
    await until(loaded, "the lists");
    await press(document.activeElement as HTMLElement, "Escape");
    expect(dialog?.open).toBe(false);
    expect(document.activeElement?.id).toBe("opener");
    expect(window.location.hash).toBe("#/");

    await press(window, "k", { ctrlKey: true });
    expect(dialog?.open).toBe(true);
    await until(loaded, "the lists");
    await press(window, "k", { ctrlKey: true });
    expect(dialog?.open).toBe(false);
  });

  it("opens the settings at a setting, and says when nothing matches", async () => {
    await press(window, "k", { ctrlKey: true });
    const input = $<HTMLInputElement>("dialog.palette input") as HTMLInputElement;
    await until(loaded, "the lists");
    await type(input, "settings");
    await press(input, "Enter");
    expect($("#settings")?.textContent).toBe("(all)");
    await press(window, "k", { ctrlKey: true });
    await until(loaded, "the lists");
    await type($<HTMLInputElement>("dialog.palette input") as HTMLInputElement, "zzqx");
    expect(options()).toHaveLength(0);
    expect($(".palette-status")?.textContent).toContain("Nothing matches");
  });
});
