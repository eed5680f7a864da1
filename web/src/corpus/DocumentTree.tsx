/** The corpus as a folder tree table: status, chunks, type, extraction and dates per file. */
import { useEffect, useRef, useState, type ReactNode } from "react";

import type { DocumentStatus } from "../api/types";
import {
  checkState,
  contextualizationProgress,
  descendantFiles,
  isSelectable,
  statusCounts,
  type FileNode,
  type FolderNode,
  type TreeNode,
} from "./tree";

const STATUS_TEXT: Record<DocumentStatus, { label: string; title: string }> = {
  indexed: { label: "indexed", title: "Searchable" },
  no_text: { label: "no text", title: "Indexed, but no text could be extracted (0 chunks)" },
  pending: { label: "pending", title: "In the corpus folder, not indexed yet" },
  failed: { label: "failed", title: "Its last ingest failed; the file has not changed since" },
  outdated: { label: "outdated", title: "The file changed since it was indexed" },
  missing: { label: "missing", title: "Indexed, but the file is gone from the corpus folder" },
};

const STATUS_ORDER: DocumentStatus[] = ["indexed", "pending", "failed", "outdated", "missing", "no_text"];

function when(iso: string | null): string {
  if (iso === null) return "\u2014";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function StatusPill({ status, reason }: { status: DocumentStatus; reason?: string | null }) {
  const text = STATUS_TEXT[status];
  return (
    <span className={`pill-status status-${status}`} title={reason ? `${text.title}: ${reason}` : text.title}>
      {text.label}
    </span>
  );
}

/** A checkbox whose "mixed" state is the DOM's `indeterminate` property. */
function TriCheckbox({
  node,
  selected,
  label,
  onToggle,
}: {
  node: TreeNode;
  selected: ReadonlySet<string>;
  label: string;
  onToggle: (node: TreeNode) => void;
}) {
  const ref = useRef<HTMLInputElement>(null);
  const state = checkState(node, selected);
  const disabled = node.kind === "file" ? !isSelectable(node) : !descendantFiles(node).some(isSelectable);
  useEffect(() => {
    if (ref.current) ref.current.indeterminate = state === "mixed";
  }, [state]);
  return (
    <input
      ref={ref}
      type="checkbox"
      aria-label={label}
      checked={state === "checked"}
      disabled={disabled}
      title={disabled ? "Not indexed yet: nothing to delete" : undefined}
      onChange={() => onToggle(node)}
    />
  );
}

interface DocumentTreeProps {
  root: FolderNode;
  selected: ReadonlySet<string>;
  onToggle: (node: TreeNode) => void;
  /** A document to show (the ⌘K palette went to it): its folders open, its row in view and focused. */
  focusPath?: string | null;
}

/** The folders above a `/`-separated path, outermost first: `a/b/c.md` -> `a`, `a/b`. */
function foldersAbove(path: string): string[] {
  const parts = path.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

export function DocumentTree({ root, selected, onToggle, focusPath = null }: DocumentTreeProps) {
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const table = useRef<HTMLTableElement>(null);
  const shown = useRef<string | null>(null);
  const rows: ReactNode[] = [];

  // open the folders above the document the URL names
  useEffect(() => {
    if (!focusPath) return;
    const above = foldersAbove(focusPath);
    setCollapsed((prev) =>
      above.some((f) => prev.has(f)) ? new Set([...prev].filter((f) => !above.includes(f))) : prev,
    );
  }, [focusPath]);

  // bring its row into view and focus it, once per address (the list is re-read while files are pending)
  useEffect(() => {
    if (!focusPath || shown.current === focusPath) return;
    const row = [...(table.current?.querySelectorAll<HTMLElement>("tr.file-row") ?? [])].find(
      (r) => r.dataset.path === focusPath,
    );
    if (row === undefined) return;
    shown.current = focusPath;
    row.scrollIntoView?.({ block: "center" });
    row.focus();
  });

  const fileRow = (file: FileNode, depth: number) => {
    const doc = file.doc;
    const progress = contextualizationProgress(doc);
    const spotlit = file.path === focusPath;
    rows.push(
      <tr
        key={`f:${file.path}`}
        className={spotlit ? "file-row is-spotlit" : "file-row"}
        data-path={file.path}
        data-status={doc.status}
        aria-current={spotlit ? "true" : undefined}
        tabIndex={spotlit ? -1 : undefined}
      >
        <td className="select">
          <TriCheckbox node={file} selected={selected} label={`Select ${file.path}`} onToggle={onToggle} />
        </td>
        <th scope="row" className="name" style={{ paddingLeft: `${0.5 + depth * 1.25}rem` }}>
          <span className="file-name">{file.name}</span>
        </th>
        <td>
          <StatusPill status={doc.status} reason={doc.reason} />
          {doc.reason && <div className="failure-reason muted">{doc.reason}</div>}
          {progress !== null && (
            <span
              className="ctx-progress muted"
              title="Searchable already; LLM blurbs are still being written and each chunk is re-indexed as its blurb lands"
            >
              {" "}
              {progress}
            </span>
          )}
        </td>
        <td className="num">{doc.n_chunks ?? "\u2014"}</td>
        <td>{doc.file_type || "\u2014"}</td>
        <td>{doc.extractions.length > 0 ? doc.extractions.join(", ") : "\u2014"}</td>
        <td className="date">{when(doc.file_modified_at)}</td>
        <td className="date">{when(doc.ingested_at)}</td>
      </tr>,
    );
  };

  const folderRows = (folder: FolderNode, depth: number) => {
    for (const child of folder.folders) {
      const open = !collapsed.has(child.path);
      const files = descendantFiles(child);
      const counts = statusCounts(child);
      const chunks = files.reduce((sum, f) => sum + (f.doc.n_chunks ?? 0), 0);
      rows.push(
        <tr key={`d:${child.path}`} className="folder-row" data-path={`${child.path}/`}>
          <td className="select">
            <TriCheckbox
              node={child}
              selected={selected}
              label={`Select everything in ${child.path}/`}
              onToggle={onToggle}
            />
          </td>
          <th scope="row" className="name" style={{ paddingLeft: `${0.5 + depth * 1.25}rem` }}>
            <button
              type="button"
              className="folder-toggle"
              aria-expanded={open}
              onClick={() =>
                setCollapsed((prev) => {
                  const next = new Set(prev);
                  if (open) next.add(child.path);
                  else next.delete(child.path);
                  return next;
                })
              }
            >
              <span className="chevron" aria-hidden="true">
                {open ? "\u25be" : "\u25b8"}
              </span>
              {child.name}/
            </button>
            <span className="muted folder-size">
              {" "}
              {files.length} file{files.length === 1 ? "" : "s"}
            </span>
          </th>
          <td>
            <div className="folder-statuses">
              {STATUS_ORDER.filter((s) => counts[s]).map((s) => (
                <span key={s} className={`pill-status status-${s}`} title={STATUS_TEXT[s].title}>
                  {counts[s]} {STATUS_TEXT[s].label}
                </span>
              ))}
            </div>
          </td>
          <td className="num">{chunks}</td>
          <td colSpan={4} />
        </tr>,
      );
      if (open) folderRows(child, depth + 1);
    }
    for (const file of folder.files) fileRow(file, depth);
  };
  folderRows(root, 0);

  return (
    <div className="table-scroll">
      <table className="corpus-tree" ref={table}>
        <caption className="visually-hidden">
          Documents by folder. A folder&apos;s checkbox selects every indexed document below it.
        </caption>
        <thead>
          <tr>
            <td className="select">
              <TriCheckbox
                node={root}
                selected={selected}
                label="Select every indexed document"
                onToggle={onToggle}
              />
            </td>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Chunks
            </th>
            <th scope="col">Type</th>
            <th scope="col">Extraction</th>
            <th scope="col">Modified</th>
            <th scope="col">Indexed</th>
          </tr>
        </thead>
        <tbody>{rows}</tbody>
      </table>
    </div>
  );
}
