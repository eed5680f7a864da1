/**
 * The message archives in GRAPH_DOCS_PATH: upload a chat.db with its -wal/-shm (each
 * file's outcome, refusals with their reason), what the graph holds of each, delete.
 */
import { useEffect, useRef, useState, type ChangeEvent } from "react";

import { describeError } from "../api/client";
import { deleteGraphSource, uploadGraphSources } from "../api/resources";
import type {
  ForgetReceipt,
  GraphSourceInfo,
  GraphSourceList,
  GraphSourceRemoved,
  GraphUploadResponse,
} from "../api/types";
import { uploadSummary } from "../corpus/upload";
import { formatBytes } from "../shared/format";
import { ConfirmDialog } from "../shared/Modal";
import { ForgetReceiptView } from "../shared/ForgetReceipt";
import { UploadResults } from "../shared/UploadResults";

interface GraphSourcesProps {
  list: GraphSourceList | null;
  error: string | null;
  /** Files landed (or an archive left): read the lists again; follow any build launched. */
  onChanged: (upload: GraphUploadResponse | null) => void;
  /** An archive the URL names (`#/graph?archive=`): its row in view and focused. */
  focusPath?: string | null;
}

function daysText(source: GraphSourceInfo): string {
  if (!source.supported) return "\u2014";
  if (source.days === 0) return "none yet";
  const span =
    source.first_day === source.last_day ? source.first_day : `${source.first_day} \u2013 ${source.last_day}`;
  return `${source.days} in ${source.threads} thread${source.threads === 1 ? "" : "s"} (${span})`;
}

function removedText(removed: GraphSourceRemoved): string {
  const days = removed.days === 1 ? "1 day left" : `${removed.days} days left`;
  return `Removed ${removed.removed_files.join(", ")}; ${days} the graph.`;
}

export function GraphSources({ list, error, onChanged, focusPath = null }: GraphSourcesProps) {
  const table = useRef<HTMLTableElement>(null);
  const shown = useRef<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [result, setResult] = useState<GraphUploadResponse | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [pending, setPending] = useState<GraphSourceInfo | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string; receipt?: ForgetReceipt } | null>(null);

  const upload = async (event: ChangeEvent<HTMLInputElement>) => {
    const input = event.currentTarget;
    const files = Array.from(input.files ?? []);
    input.value = ""; // picking the same files again must fire `change` again
    if (files.length === 0) return;
    setBusy(`Uploading ${files.length} file${files.length === 1 ? "" : "s"}\u2026`);
    setFailure(null);
    setResult(null);
    try {
      const answer = await uploadGraphSources(files);
      setResult(answer);
      onChanged(answer);
    } catch (exc) {
      setFailure(`The upload failed: ${describeError(exc)}`);
    } finally {
      setBusy(null);
    }
  };

  const confirmDelete = async () => {
    if (pending === null) return;
    setDeleting(true);
    try {
      const removed = await deleteGraphSource(pending.path);
      setOutcome({ ok: true, text: removedText(removed), receipt: removed.receipt });
    } catch (exc) {
      setOutcome({ ok: false, text: `Deleting ${pending.path} failed: ${describeError(exc)}` });
    } finally {
      setDeleting(false);
      setPending(null);
      onChanged(null);
    }
  };

  // bring the archive the URL names into view, once per address (the list is re-read during builds)
  useEffect(() => {
    if (!focusPath || shown.current === focusPath) return;
    const row = [...(table.current?.querySelectorAll<HTMLElement>("tbody tr") ?? [])].find(
      (r) => r.dataset.path === focusPath,
    );
    if (row === undefined) return;
    shown.current = focusPath;
    row.scrollIntoView?.({ block: "center" });
    row.focus();
  });

  const sources = list?.sources ?? [];
  return (
    <section className="upload graph-sources" aria-labelledby="graph-sources-heading">
      <h3 id="graph-sources-heading">Message archives</h3>
      <p className="hint">
        An iMessage <code>chat.db</code> from <code>~/Library/Messages</code>: pick it together with{" "}
        <code>chat.db-wal</code> and <code>chat.db-shm</code> (Messages keeps its newest messages there). Each
        archive is built into the graph by a Dagster run; nothing is ever written to it.
        {list && (
          <>
            {" "}
            Stored in <code>{list.root}</code>.
          </>
        )}
      </p>
      <div className="upload-controls">
        <label className="file-pick">
          Upload an archive
          <input type="file" multiple disabled={busy !== null} onChange={(e) => void upload(e)} />
        </label>
      </div>
      <div aria-live="polite">
        {busy && <p className="muted">{busy}</p>}
        {failure && (
          <p className="error" role="alert">
            {failure}
          </p>
        )}
        {result && (
          <UploadResults
            summary={uploadSummary(result)}
            rows={result.results.map((r) => ({ ...r, stored: r.path }))}
          />
        )}
        {outcome && (
          <div className={outcome.ok ? "notice" : "error"} role={outcome.ok ? "status" : "alert"}>
            <p>{outcome.text}</p>
            {outcome.receipt && <ForgetReceiptView receipt={outcome.receipt} />}
          </div>
        )}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <h4 className="table-heading">In the message folder</h4>
      {list !== null && sources.length === 0 ? (
        <p className="muted">No archive yet: upload one above, or drop it into the folder.</p>
      ) : (
        <div className="table-scroll">
          <table className="graph-source-table" ref={table}>
            <caption className="visually-hidden">Message archives</caption>
            <thead>
              <tr>
                <th scope="col">Archive</th>
                <th scope="col">Kind</th>
                <th scope="col" className="num">
                  Size
                </th>
                <th scope="col">Modified</th>
                <th scope="col">Days in the graph</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sources.map((s) => (
                <tr
                  key={s.path}
                  data-path={s.path}
                  className={
                    [s.supported ? "" : "unsupported", s.path === focusPath ? "is-spotlit" : ""]
                      .join(" ")
                      .trim() || undefined
                  }
                  aria-current={s.path === focusPath ? "true" : undefined}
                  tabIndex={s.path === focusPath ? -1 : undefined}
                >
                  <td>
                    <code>{s.path}</code>
                    {s.companions.length > 0 && (
                      <span className="muted companions"> + {s.companions.join(", ")}</span>
                    )}
                  </td>
                  <td>
                    {s.supported ? (
                      s.kind
                    ) : (
                      <span className="failure-reason">not an archive: {s.reason}</span>
                    )}
                  </td>
                  <td className="num">{formatBytes(s.size_bytes)}</td>
                  <td className="date">{new Date(s.modified_at).toLocaleString()}</td>
                  <td>{daysText(s)}</td>
                  <td>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => {
                        setOutcome(null);
                        setPending(s);
                      }}
                    >
                      Delete<span className="visually-hidden"> {s.path}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog
        open={pending !== null}
        title={`Delete ${pending?.path ?? "the archive"}?`}
        confirmLabel="Delete"
        busy={deleting}
        onConfirm={() => void confirmDelete()}
        onClose={() => setPending(null)}
      >
        {pending && (
          <>
            <p>
              The files <code>{[pending.path, ...pending.companions].join(", ")}</code> are deleted from the
              message folder.
            </p>
            <p className="hint">
              {pending.days > 0
                ? `Its ${pending.days} day${pending.days === 1 ? "" : "s"} leave the graph at once, with what only they supported; you get a receipt.`
                : "The graph holds none of its days."}
            </p>
          </>
        )}
      </ConfirmDialog>
    </section>
  );
}
