/** The corpus screen: upload, the folder tree with per-document status, and deletion. */
import { useCallback, useMemo, useState } from "react";

import { describeError } from "../api/client";
import { deleteDocuments } from "../api/resources";
import type { DeleteResponse, DocumentInfo, DocumentStatus, ForgetReceipt } from "../api/types";
import { buildTree, resolveSelection, toggle, TRANSITIONAL, type TreeNode } from "./tree";
import { useDocuments } from "./useDocuments";
import { useBackups } from "../backups/useBackups";
import { BackupPanel } from "../backups/BackupPanel";
import { useJob } from "../jobs/useJob";
import { DocumentTree } from "./DocumentTree";
import { ConfirmDialog } from "../shared/Modal";
import { ForgetReceiptView } from "../shared/ForgetReceipt";
import { UploadPanel } from "./UploadPanel";
import { EvaluationPanel } from "./EvaluationPanel";
import { evaluations } from "./evaluation";

const SHOWN_PATHS = 8;

/** What the list is being re-read for: files the folder sensor has not taken yet, or blurbs. */
function watchingText(docs: readonly DocumentInfo[]): string {
  if (docs.some((d) => TRANSITIONAL.includes(d.status))) return "waiting for the folder sensor";
  const n = docs.filter((d) => d.contextualizing).length;
  return `writing LLM blurbs for ${n} searchable file${n === 1 ? "" : "s"}`;
}

function deletedLine(result: DeleteResponse): string {
  const n = result.deleted.length;
  const parts = [`Deleted ${n} document${n === 1 ? "" : "s"} from the index`];
  const removed = result.files.filter((f) => f.removed).length;
  if (result.files.length > 0) parts.push(`removed ${removed} of ${result.files.length} files`);
  if (result.pruned_folders.length > 0) parts.push(`pruned ${result.pruned_folders.join(", ")}`);
  if (result.not_found.length > 0) parts.push(`${result.not_found.length} were already gone`);
  return `${parts.join("; ")}.`;
}

interface CorpusScreenProps {
  /** Changes when something outside re-shaped the corpus (a finished ingest job). */
  version: number;
  /** A document the URL names (`#/corpus?path=`): shown and focused in the tree. */
  focusPath?: string | null;
}

export function CorpusScreen({ version, focusPath = null }: CorpusScreenProps) {
  const [changes, setChanges] = useState(0);
  const documents = useDocuments(version + changes);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [removeFiles, setRemoveFiles] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [outcome, setOutcome] = useState<{
    ok: boolean;
    text: string;
    failures: string[];
    receipt?: ForgetReceipt;
  } | null>(null);
  const backups = useBackups(
    "rag",
    useCallback(() => setChanges((c) => c + 1), []),
  );

  const evaluation = useJob(evaluations, {
    lost: "Lost the evaluation's progress",
    notKilled: "The evaluation was not killed",
  });

  const docs = useMemo(() => documents.list?.documents ?? [], [documents.list]);
  const tree = useMemo(() => buildTree(docs), [docs]);
  const chosen = resolveSelection(docs, selected);

  const onToggle = (node: TreeNode) =>
    setSelected((prev) => toggle(node, resolveSelection(docs, prev).paths));

  const confirmDelete = async () => {
    setDeleting(true);
    try {
      const result = await deleteDocuments(chosen.docIds, removeFiles);
      const failures = result.files
        .filter((f) => !f.removed)
        .map((f) => `${f.relative_path}: ${f.message ?? f.code ?? "not removed"}`);
      setOutcome({ ok: true, text: deletedLine(result), failures, receipt: result.receipt });
      setSelected(new Set());
    } catch (exc) {
      setOutcome({ ok: false, text: `Deleting failed: ${describeError(exc)}`, failures: [] });
    } finally {
      setDeleting(false);
      setConfirming(false);
      setChanges((c) => c + 1);
    }
  };

  const counts = documents.list?.counts ?? {};
  const countText = (Object.entries(counts) as [DocumentStatus, number][])
    .map(([status, n]) => `${n} ${status.replace("_", " ")}`)
    .join(" \u00b7 ");
  const paths = [...chosen.paths].sort();

  return (
    <div className="corpus-screen">
      <div className="corpus-head">
        <h2 id="corpus-heading">Corpus</h2>
        <p className="muted corpus-counts" aria-live="polite">
          {documents.list === null
            ? "Reading the corpus\u2026"
            : `${docs.length} file${docs.length === 1 ? "" : "s"}${countText ? `: ${countText}` : ""}`}
          {documents.watching && (
            <span className="watching">
              {" "}
              {"\u00b7"} {watchingText(docs)}
              {"\u2026"}
            </span>
          )}
        </p>
        <button type="button" onClick={documents.refresh}>
          Refresh
        </button>
      </div>
      <UploadPanel onUploaded={() => setChanges((c) => c + 1)} />
      <section className="documents" aria-labelledby="documents-heading">
        <h3 id="documents-heading">Documents</h3>
        {documents.error && (
          <p className="error" role="alert">
            {documents.error}
          </p>
        )}
        <div className="selection-bar">
          <span aria-live="polite">{chosen.docIds.length} selected</span>
          <button
            type="button"
            className="danger"
            disabled={chosen.docIds.length === 0}
            onClick={() => {
              setRemoveFiles(false);
              setConfirming(true);
            }}
          >
            Delete selected{"\u2026"}
          </button>
          {chosen.docIds.length > 0 && (
            <button type="button" className="link-button" onClick={() => setSelected(new Set())}>
              Clear selection
            </button>
          )}
        </div>
        {outcome && (
          <div className={outcome.ok ? "notice" : "error"} role={outcome.ok ? "status" : "alert"}>
            <p>{outcome.text}</p>
            {outcome.failures.length > 0 && (
              <ul>
                {outcome.failures.map((f) => (
                  <li key={f}>{f}</li>
                ))}
              </ul>
            )}
            {outcome.receipt && outcome.receipt.stores.length > 0 && (
              <ForgetReceiptView receipt={outcome.receipt} />
            )}
          </div>
        )}
        {focusPath && documents.list !== null && !docs.some((d) => d.relative_path === focusPath) && (
          <p className="notice" role="status">
            No document is at <code>{focusPath}</code> any more.
          </p>
        )}
        {documents.list !== null && docs.length === 0 ? (
          <p className="muted">The corpus folder is empty: upload files or a folder above.</p>
        ) : (
          <DocumentTree root={tree} selected={chosen.paths} onToggle={onToggle} focusPath={focusPath} />
        )}
      </section>
      <BackupPanel backups={backups} />
      <EvaluationPanel evaluation={evaluation} />
      <ConfirmDialog
        open={confirming}
        title={`Delete ${chosen.docIds.length} document${chosen.docIds.length === 1 ? "" : "s"}?`}
        confirmLabel="Delete"
        busy={deleting}
        onConfirm={() => void confirmDelete()}
        onClose={() => setConfirming(false)}
      >
        <ul className="delete-list">
          {paths.slice(0, SHOWN_PATHS).map((p) => (
            <li key={p}>
              <code>{p}</code>
            </li>
          ))}
          {paths.length > SHOWN_PATHS && <li>{`\u2026and ${paths.length - SHOWN_PATHS} more`}</li>}
        </ul>
        <label className="checkbox-label">
          <input type="checkbox" checked={removeFiles} onChange={(e) => setRemoveFiles(e.target.checked)} />
          Also remove the files from the corpus folder
        </label>
        <p className="hint">
          {removeFiles
            ? "The files are deleted from disk too, and folders left empty are removed."
            : "The files stay in the corpus folder and list as pending."}
        </p>
        <p className="hint">
          Their chunks, vectors, blurbs, BM25 entries and cached previews are deleted and checked; answers
          that cited them are redacted. You get a receipt, with the backups that still hold them.
        </p>
      </ConfirmDialog>
    </div>
  );
}
