/**
 * The graph's upkeep on its screen: the stale banner with its Rebuild button, the Reset
 * button with its confirmation, and a rebuild of a range of days. Each launches a run
 * that the screen follows like a build (`useGraphBuild`).
 */
import { useState } from "react";

import type { GraphStatus, StaleFlag } from "../api/types";
import { ConfirmDialog } from "../shared/Modal";
import type { GraphBuildController } from "./useGraphBuild";

/** A run of the graph is being launched, or the followed one has not ended. */
function occupied(controller: GraphBuildController): boolean {
  return controller.busy || (controller.build !== null && !controller.build.done);
}

interface StaleBannerProps {
  stale: StaleFlag | null;
  controller: GraphBuildController;
  /** There is a supported archive to rebuild from. */
  canBuild: boolean;
}

/** Nothing while the graph matches its settings; else why not, and a rebuild of every day. */
export function GraphStaleBanner({ stale, controller, canBuild }: StaleBannerProps) {
  if (stale === null) return null;
  const rebuilding = controller.build?.kind === "rebuild" && !controller.build.done;
  return (
    <section className="stale-banner graph-stale" aria-labelledby="graph-stale-heading">
      <p>
        <strong id="graph-stale-heading">The message graph is out of date with the current settings.</strong>{" "}
        <span className="stale-reason">
          {stale.reason.charAt(0).toUpperCase() + stale.reason.slice(1)} (since{" "}
          {new Date(stale.since).toLocaleString()}). Days extracted before keep what the old settings made of
          them until every day is extracted again.
        </span>
      </p>
      <button
        type="button"
        className="primary"
        disabled={!canBuild || occupied(controller)}
        onClick={() => controller.rebuild()}
      >
        {rebuilding ? "Rebuilding\u2026" : "Rebuild every day"}
      </button>
    </section>
  );
}

interface ResetProps {
  status: GraphStatus | null;
  controller: GraphBuildController;
}

function plural(n: number, one: string, many: string = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "Reset…", then a confirmation naming what is dropped and what is kept. */
export function GraphResetButton({ status, controller }: ResetProps) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="danger" disabled={occupied(controller)} onClick={() => setOpen(true)}>
        Reset{"\u2026"}
      </button>
      <ConfirmDialog
        open={open}
        title="Reset the message graph?"
        confirmLabel="Reset the graph"
        busy={controller.busy}
        onConfirm={() => {
          controller.reset();
          setOpen(false);
        }}
        onClose={() => setOpen(false)}
      >
        <p>
          {status
            ? `Its ${plural(status.days, "day")}, ${plural(status.entities, "entity", "entities")} and ${plural(status.relations, "relation")} are dropped`
            : "Everything the graph holds is dropped"}
          , with the extraction cache and the build manifest. The archives in the message folder are kept:
          build them again to get the graph back.
        </p>
      </ConfirmDialog>
    </>
  );
}

interface RebuildDaysProps {
  controller: GraphBuildController;
  canBuild: boolean;
}

/** Two days and "Rebuild these days": every archive's days in the range extracted again. */
export function RebuildDaysForm({ controller, canBuild }: RebuildDaysProps) {
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const backwards = from !== "" && to !== "" && from > to;
  return (
    <form
      className="rebuild-days"
      aria-label="Rebuild a range of days"
      onSubmit={(event) => {
        event.preventDefault();
        if (!backwards) controller.rebuild({ from: from || null, to: to || null });
      }}
    >
      <label>
        From <input type="date" value={from} onChange={(event) => setFrom(event.target.value)} />
      </label>{" "}
      <label>
        To <input type="date" value={to} onChange={(event) => setTo(event.target.value)} />
      </label>{" "}
      <button
        type="submit"
        disabled={!canBuild || backwards || occupied(controller) || (from === "" && to === "")}
      >
        Rebuild these days
      </button>
      {backwards && <span className="field-error"> The first day comes after the last.</span>}
    </form>
  );
}
