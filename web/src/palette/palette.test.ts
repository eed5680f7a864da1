import { describe, expect, it } from "vitest";

import type { Route } from "../app/route";
import { CARDS, GROUPS } from "../map/codebaseMap.data";
import { settingField } from "../settings/testing";
import { documentInfo } from "../test/fixtures";
import { actionItems, archiveItems, documentItems, mapItems, screenItems, settingItems } from "./items";
import {
  EMPTY_QUERY_PER_SECTION,
  normalize,
  rankItems,
  runTarget,
  scoreItem,
  type PaletteItem,
  type PaletteSection,
} from "./palette";

function item(
  title: string,
  section: PaletteSection = "Documents",
  detail?: string,
  keywords?: string,
): PaletteItem {
  return {
    id: `${section}:${title}`,
    section,
    title,
    detail,
    keywords,
    target: { kind: "route", route: { view: "corpus", path: title } },
  };
}

const titles = (items: PaletteItem[]) => items.map((i) => i.title);

describe("rankItems", () => {
  it("puts the exact title first, then a prefix, a word start, a substring", () => {
    const items = [
      item("the kettle manual"),
      item("kettles.md"),
      item("mykettle.txt"),
      item("kettle"),
      item("soup.txt"),
    ];
    expect(titles(rankItems(items, "kettle"))).toEqual([
      "kettle",
      "kettles.md",
      "the kettle manual",
      "mykettle.txt",
    ]);
  });

  it("needs every word of the query, in any order, in the title or the detail", () => {
    const items = [
      item("kettle.md", "Documents", "manuals/kettle.md"),
      item("kettle.md", "Documents", "archive/kettle.md"),
      item("power.md", "Documents", "station/power.md"),
    ];
    expect(rankItems(items, "manuals kettle").map((i) => i.detail)).toEqual(["manuals/kettle.md"]);
    expect(rankItems(items, "kettle manuals").map((i) => i.detail)).toEqual(["manuals/kettle.md"]);
    expect(rankItems(items, "kettle nowhere")).toEqual([]);
  });

  it("ranks a title match above a detail or keyword match", () => {
    const items = [
      item("Chunk size", "Settings", "CHUNK_SIZE", "Target chunk length"),
      item("chunks.py", "Map"),
    ];
    expect(titles(rankItems(items, "chunk"))).toEqual(["Chunk size", "chunks.py"]);
    expect(titles(rankItems(items, "length"))).toEqual(["Chunk size"]);
  });

  it("finds letters in order as a last resort, ignores case and accents", () => {
    const items = [item("run_turn", "Map"), item("résumé.pdf")];
    expect(titles(rankItems(items, "rntrn"))).toEqual(["run_turn"]);
    expect(titles(rankItems(items, "RESUME"))).toEqual(["résumé.pdf"]);
    expect(normalize("Évaluation")).toBe("evaluation");
    expect(scoreItem(item("kettle"), "xyz")).toBe(0);
  });

  it("breaks ties by section, then the shorter title", () => {
    const items = [item("Graph", "Map"), item("Graph", "Screens"), item("Graph workdir", "Map")];
    expect(rankItems(items, "graph").map((i) => `${i.section}:${i.title}`)).toEqual([
      "Screens:Graph",
      "Map:Graph",
      "Map:Graph workdir",
    ]);
  });

  it("lists every screen and action and a few of each other section for an empty query", () => {
    const docs = Array.from({ length: 12 }, (_, i) => item(`doc${i}.md`));
    const ranked = rankItems([...docs, ...screenItems(true), ...actionItems(true)], "  ");
    expect(ranked.slice(0, 5).map((i) => i.section)).toEqual([
      "Screens",
      "Screens",
      "Screens",
      "Screens",
      "Screens",
    ]);
    expect(ranked.filter((i) => i.section === "Actions")).toHaveLength(1);
    expect(titles(ranked.filter((i) => i.section === "Documents"))).toEqual(
      docs.slice(0, EMPTY_QUERY_PER_SECTION).map((d) => d.title),
    );
  });

  it("caps the list", () => {
    const docs = Array.from({ length: 80 }, (_, i) => item(`note${i}.md`));
    expect(rankItems(docs, "note")).toHaveLength(50);
    expect(rankItems(docs, "note", 3)).toHaveLength(3);
  });
});

describe("the palette's items", () => {
  it("finds a document by its name and opens it in the corpus tree", () => {
    const items = documentItems([
      documentInfo("manuals/kettle.md"),
      documentInfo("station/power.md", { status: "pending" }),
    ]);
    const [found] = rankItems(items, "kettle");
    expect(found?.title).toBe("kettle.md");
    expect(found?.detail).toBe("manuals/kettle.md \u00b7 indexed");
    expect(found?.target).toEqual({ kind: "route", route: { view: "corpus", path: "manuals/kettle.md" } });
  });

  it("shows the map only in developer mode", () => {
    expect(titles(screenItems(true))).toContain("Map");
    expect(titles(screenItems(false))).not.toContain("Map");
    expect(actionItems(false)[0]?.target).toEqual({ kind: "developer-mode", on: true });
  });

  it("finds a map card by its title or its file, and spotlights it", () => {
    const items = mapItems(CARDS, GROUPS);
    expect(rankItems(items, "run_turn")[0]?.target).toEqual({
      kind: "route",
      route: { view: "map", card: "turn-runner" },
    });
    expect(rankItems(items, "vector_store")[0]?.title).toBe("PostgreSQL + pgvector");
  });

  it("finds a setting by its label, its name or its description", () => {
    const items = settingItems([
      settingField("CHUNK_SIZE", { description: "Target chunk length in tokens." }),
      settingField("API_PORT", { runtime_editable: false }),
    ]);
    expect(rankItems(items, "chunk size")[0]?.target).toEqual({ kind: "settings", name: "CHUNK_SIZE" });
    expect(rankItems(items, "tokens")[0]?.title).toBe("Chunk size");
    expect(rankItems(items, "api_port")[0]?.detail).toBe("API_PORT (needs a restart)");
  });

  it("opens an archive on the Graph screen", () => {
    const [archive] = archiveItems([
      {
        path: "phones/chat.db",
        companions: ["phones/chat.db-wal"],
        days: 3,
        threads: 2,
        first_day: "2026-03-01",
        last_day: "2026-03-03",
        kind: "imessage",
        modified_at: "2026-03-04T10:00:00Z",
        reason: null,
        size_bytes: 4096,
        supported: true,
      },
    ]);
    expect(archive?.title).toBe("chat.db");
    expect(archive?.target).toEqual({
      kind: "route",
      route: { view: "graph", entity: null, day: null, archive: "phones/chat.db" },
    });
  });

  it("carries out a choice", () => {
    const seen: string[] = [];
    const actions = {
      navigate: (route: Route) => seen.push(`navigate ${route.view}`),
      openSettings: (name: string | null) => seen.push(`settings ${name}`),
      setDeveloperMode: (on: boolean) => seen.push(`developer ${on}`),
    };
    runTarget({ kind: "route", route: { view: "map", card: null } }, actions);
    runTarget({ kind: "settings", name: "TOP_K" }, actions);
    runTarget({ kind: "developer-mode", on: false }, actions);
    expect(seen).toEqual(["navigate map", "settings TOP_K", "developer false"]);
  });
});
