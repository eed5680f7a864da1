/**
 * Backups of one corpus (the documents or the message graph): Export writes a bundle
 * into the corpus's varagity-exports/ folder, Restore replaces the corpus with one,
 * after a confirmation naming what is replaced. Refused bundles are greyed with why.
 */
import { useState } from "react";

import type { BundleInfo } from "../api/types";
import { countsText, driftLines, replaceText, runLine } from "./bundles";
import type { BackupController } from "./useBackups";
import { formatBytes } from "../shared/format";
import { ConfirmDialog } from "../shared/Modal";

interface BackupPanelProps {
  backups: BackupController;
}

function created(bundle: BundleInfo): string {
  return bundle.created_at
    ? new Date(bundle.created_at).toISOString().slice(0, 16).replace("T", " ") + " UTC"
    : "";
}

export function BackupPanel({ backups }: BackupPanelProps) {
  const [chosen, setChosen] = useState<BundleInfo | null>(null);
  const { corpus, list, run, busy, error } = backups;
  const heading = `backups-${corpus}-heading`;
  const bundles = list?.bundles ?? [];
  return (
    <section className="backups" aria-labelledby={heading}>
      <h3 id={heading}>Backups</h3>
      <div className="backup-bar">
        <button type="button" disabled={busy} onClick={backups.exportNow}>
          Export
        </button>
        <button type="button" className="link-button" onClick={backups.refresh}>
          Refresh
        </button>
        {list && <span className="muted">{`in ${list.folder}`}</span>}
      </div>
      {run && (
        <p className={run.state === "failed" ? "error" : "notice"} role="status" aria-live="polite">
          {runLine(run)}{" "}
          <a href={run.dagster_url} target="_blank" rel="noreferrer">
            Dagster run
          </a>
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {list !== null && bundles.length === 0 ? (
        <p className="muted">No backup yet: Export writes one.</p>
      ) : (
        <ul className="bundle-list">
          {bundles.map((b) => (
            <li key={b.name} className={b.ok ? "bundle" : "bundle refused"} aria-disabled={!b.ok}>
              <span className="bundle-name">
                <code>{b.name}</code> <span className="muted">{created(b)}</span>
              </span>
              <span className="muted">{`${formatBytes(b.size_bytes)} \u00b7 ${countsText(b.counts)}`}</span>
              {b.ok ? (
                <span
                  className="pill ok"
                  title="Its manifest, members and sizes check out against this stack; every sha256 is checked again as it restores."
                >
                  verified
                </span>
              ) : (
                <span className="pill refused">{`refused: ${b.code ?? "invalid"}`}</span>
              )}
              {b.stale && <span className="pill">stale when exported</span>}
              {!b.ok && b.detail && <p className="hint">{b.detail}</p>}
              {driftLines(b).length > 0 && (
                <p className="hint">
                  {`Drift (the restored corpus is flagged stale): ${driftLines(b).join("; ")}`}
                </p>
              )}
              <button type="button" disabled={!b.ok || busy} onClick={() => setChosen(b)}>
                Restore{"\u2026"}
              </button>
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={chosen !== null}
        title={`Restore ${chosen?.name ?? ""}?`}
        confirmLabel="Restore"
        busy={busy}
        onConfirm={() => {
          if (chosen) backups.restore(chosen.name);
          setChosen(null);
        }}
        onClose={() => setChosen(null)}
      >
        {chosen && list && <p>{replaceText(corpus, list.current, chosen)}</p>}
        {chosen && driftLines(chosen).length > 0 && (
          <p className="hint">{`Settings differ, so the corpus will be flagged stale: ${driftLines(chosen).join("; ")}.`}</p>
        )}
      </ConfirmDialog>
    </section>
  );
}
