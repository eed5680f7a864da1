// @vitest-environment happy-dom
/**
 * The Graph screen's upkeep in a DOM (happy-dom): Reset asks first in a modal dialog
 * (Cancel changes nothing, confirming resets once), the stale banner says why and
 * rebuilds every day, and a range of days is rebuilt from two dates. The controller is
 * a recording stand-in for `useGraphBuild`, whose launches and following the job tests
 * cover.
 */
import { act } from "react";
import { describe, expect, it } from "vitest";

import type { DayRange } from "../api/resources";
import type { GraphBuild, GraphStatus, StaleFlag } from "../api/types";
import { $, button, click, rootPerTest, type } from "../test/dom";
import { graphBuild } from "../test/fixtures";
import { GraphBuilds } from "./GraphBuilds";
import { GraphStaleBanner } from "./GraphMaintenance";
import type { GraphBuildController } from "./useGraphBuild";

const STATUS = {
  built: true,
  entities: 12,
  relations: 9,
  days: 8,
  messages: 30,
  sources: 1,
  refreshed_at: null,
  building: [],
  stale: null,
  engine: { name: "lightrag", package: "lightrag-hku", version: "1.5.7" },
  day_statuses: { processed: 8, pending: 0, processing: 0, failed: 0 },
} satisfies GraphStatus;

const STALE: StaleFlag = {
  reason: "graph settings changed since it was built: LLM_MODEL qwen2.5-coder-0.5b-instruct->chat",
  since: "2026-03-10T09:00:00Z",
};

/** A controller that records what the screen asked of it. */
function recorder(build: GraphBuild | null = null) {
  const calls = { reset: 0, rebuild: [] as (DayRange | undefined)[], launch: 0 };
  const controller: GraphBuildController = {
    build,
    following: false,
    busy: false,
    error: null,
    notice: null,
    follow: () => {},
    launch: () => {
      calls.launch += 1;
    },
    rebuild: (range) => {
      calls.rebuild.push(range);
    },
    reset: () => {
      calls.reset += 1;
    },
    kill: () => {},
  };
  return { controller, calls };
}

const page = rootPerTest();

describe("the reset dialog", () => {
  it("names what is dropped and kept; Cancel resets nothing, confirming resets once", async () => {
    const { controller, calls } = recorder();
    await act(async () =>
      page.root.render(
        <GraphBuilds list={{ builds: [] }} error={null} controller={controller} canBuild status={STATUS} />,
      ),
    );
    const dialog = $<HTMLDialogElement>("dialog.confirm");
    expect(dialog?.open).toBe(false);

    await click(button("Reset\u2026"));
    expect(dialog?.open).toBe(true);
    expect(dialog?.getAttribute("aria-labelledby")).toBe("confirm-title");
    expect($("#confirm-title")?.textContent).toBe("Reset the message graph?");
    expect(dialog?.textContent).toContain("Its 8 days, 12 entities and 9 relations are dropped");
    expect(dialog?.textContent).toContain("The archives in the message folder are kept");
    expect(document.activeElement).toBe(button("Cancel")); // the safe choice has focus

    await click(button("Cancel"));
    expect(dialog?.open).toBe(false);
    expect(calls.reset).toBe(0);

    await click(button("Reset\u2026"));
    await click(button("Reset the graph"));
    expect(calls.reset).toBe(1);
    expect(dialog?.open).toBe(false);
  });

  it("is not offered while a run of the graph is under way", async () => {
    const { controller } = recorder(graphBuild({ kind: "rebuild", path: null }));
    await act(async () =>
      page.root.render(
        <GraphBuilds list={{ builds: [] }} error={null} controller={controller} canBuild status={STATUS} />,
      ),
    );
    expect(button("Reset\u2026")?.disabled).toBe(true);
    expect($(".graph-build strong")?.textContent).toBe("Rebuild of every day running");
  });
});

describe("the stale banner", () => {
  it("says why the graph is stale and rebuilds every day", async () => {
    const { controller, calls } = recorder();
    await act(async () =>
      page.root.render(<GraphStaleBanner stale={STALE} controller={controller} canBuild />),
    );
    const banner = $("section.graph-stale");
    expect(banner?.getAttribute("aria-labelledby")).toBe("graph-stale-heading");
    expect($("#graph-stale-heading")?.textContent).toBe(
      "The message graph is out of date with the current settings.",
    );
    expect(banner?.textContent).toContain("Graph settings changed since it was built: LLM_MODEL");
    await click(button("Rebuild every day"));
    expect(calls.rebuild).toEqual([undefined]);
  });

  it("is absent while the graph matches its settings, and waits for a run under way", async () => {
    const { controller } = recorder();
    await act(async () =>
      page.root.render(<GraphStaleBanner stale={null} controller={controller} canBuild />),
    );
    expect(page.host.innerHTML).toBe("");
    const running = recorder(graphBuild({ kind: "rebuild", path: null })).controller;
    await act(async () => page.root.render(<GraphStaleBanner stale={STALE} controller={running} canBuild />));
    expect(button("Rebuilding\u2026")?.disabled).toBe(true);
    await act(async () =>
      page.root.render(<GraphStaleBanner stale={STALE} controller={controller} canBuild={false} />),
    );
    expect(button("Rebuild every day")?.disabled).toBe(true); // no archive to rebuild from
  });
});

describe("a rebuild of some days", () => {
  it("sends the two days, and refuses a range that runs backwards", async () => {
    const { controller, calls } = recorder();
    await act(async () =>
      page.root.render(<GraphBuilds list={{ builds: [] }} error={null} controller={controller} canBuild />),
    );
    const [from, to] = [...document.querySelectorAll<HTMLInputElement>("form.rebuild-days input")];
    expect(button("Rebuild these days")?.disabled).toBe(true); // no day chosen yet
    await type(from!, "2026-03-05");
    await type(to!, "2026-03-03");
    expect(button("Rebuild these days")?.disabled).toBe(true);
    expect($("form.rebuild-days")?.textContent).toContain("The first day comes after the last.");
    await type(from!, "2026-03-03");
    await type(to!, "2026-03-04");
    await click(button("Rebuild these days"));
    expect(calls.rebuild).toEqual([{ from: "2026-03-03", to: "2026-03-04" }]);
    expect(calls.launch).toBe(0);
  });
});
