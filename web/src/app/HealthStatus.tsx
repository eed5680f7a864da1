/** A one-line summary of `GET /api/health` for the header. */
import { useEffect, useState } from "react";

import { getHealth } from "../api/client";
import type { HealthResponse } from "../api/types";

type Health =
  { state: "loading" } | { state: "ok"; body: HealthResponse } | { state: "unreachable"; message: string };

/** "All components up", or the names of the ones that are down (details on hover). */
export function healthSummary(body: HealthResponse): { text: string; detail: string } {
  const down = Object.entries(body.components).filter(([, c]) => !c.ok);
  if (down.length === 0) return { text: "All components up", detail: "" };
  return {
    text: `Down: ${down.map(([name]) => name.replace(/_/g, " ")).join(", ")}`,
    detail: down.map(([name, c]) => `${name}: ${c.detail}`).join("\n"),
  };
}

export function HealthStatus() {
  const [health, setHealth] = useState<Health>({ state: "loading" });
  useEffect(() => {
    const abort = new AbortController();
    getHealth(abort.signal).then(
      (body) => setHealth({ state: "ok", body }),
      (exc: unknown) => {
        if (!abort.signal.aborted) setHealth({ state: "unreachable", message: String(exc) });
      },
    );
    return () => abort.abort();
  }, []);

  if (health.state === "loading") return <p className="health">Checking components…</p>;
  if (health.state === "unreachable") {
    return (
      <p className="health health-down" title={health.message}>
        API unreachable
      </p>
    );
  }
  const summary = healthSummary(health.body);
  return (
    <p
      className={`health ${health.body.status === "ok" ? "health-ok" : "health-down"}`}
      title={summary.detail || undefined}
    >
      {summary.text}
    </p>
  );
}
