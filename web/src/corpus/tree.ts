/**
 * The corpus as a folder tree, built from the documents' paths relative to DOCS_PATH,
 * and the selection rules of its checkboxes: a document can be selected only once it
 * is indexed (it has a `doc_id` to delete), and a folder's checkbox stands for every
 * selectable document below it.
 */
import type { DocumentInfo, DocumentStatus } from "../api/types";

export interface FileNode {
  kind: "file";
  name: string;
  /** The relative path: the node's key. */
  path: string;
  doc: DocumentInfo;
}

export interface FolderNode {
  kind: "folder";
  name: string;
  /** The folder's relative path; "" for the corpus root. */
  path: string;
  folders: FolderNode[];
  files: FileNode[];
}

export type TreeNode = FolderNode | FileNode;

const byName = (a: { name: string }, b: { name: string }) =>
  a.name.localeCompare(b.name, undefined, { numeric: true, sensitivity: "base" }) ||
  (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The tree of `docs`, folders before files, each level sorted by name. */
export function buildTree(docs: readonly DocumentInfo[]): FolderNode {
  const root: FolderNode = { kind: "folder", name: "", path: "", folders: [], files: [] };
  for (const doc of docs) {
    const parts = doc.relative_path.split("/").filter(Boolean);
    const name = parts.pop() ?? doc.relative_path;
    let folder = root;
    for (const part of parts) {
      const path = folder.path ? `${folder.path}/${part}` : part;
      let next = folder.folders.find((f) => f.name === part);
      if (next === undefined) {
        next = { kind: "folder", name: part, path, folders: [], files: [] };
        folder.folders.push(next);
      }
      folder = next;
    }
    folder.files.push({ kind: "file", name, path: doc.relative_path, doc });
  }
  const sort = (folder: FolderNode) => {
    folder.folders.sort(byName);
    folder.files.sort(byName);
    folder.folders.forEach(sort);
  };
  sort(root);
  return root;
}

/** Every file below `folder`, depth first in display order. */
export function descendantFiles(folder: FolderNode): FileNode[] {
  return [...folder.folders.flatMap(descendantFiles), ...folder.files];
}

/** Only indexed entries can be deleted (a pending file has no `doc_id` yet). */
export function isSelectable(file: FileNode): boolean {
  return file.doc.doc_id !== null;
}

export type CheckState = "checked" | "mixed" | "unchecked";

/** A checkbox's state: a folder is checked when every selectable descendant is. */
export function checkState(node: TreeNode, selected: ReadonlySet<string>): CheckState {
  if (node.kind === "file") return selected.has(node.path) ? "checked" : "unchecked";
  const paths = descendantFiles(node)
    .filter(isSelectable)
    .map((f) => f.path);
  const chosen = paths.filter((p) => selected.has(p)).length;
  if (chosen === 0) return "unchecked";
  return chosen === paths.length ? "checked" : "mixed";
}

/**
 * The selection after the user toggles `node`'s checkbox: a checked folder clears
 * every descendant, otherwise it selects them all; a file toggles itself.
 */
export function toggle(node: TreeNode, selected: ReadonlySet<string>): Set<string> {
  const next = new Set(selected);
  if (node.kind === "file") {
    if (next.has(node.path)) next.delete(node.path);
    else if (isSelectable(node)) next.add(node.path);
    return next;
  }
  const select = checkState(node, selected) !== "checked";
  for (const file of descendantFiles(node).filter(isSelectable)) {
    if (select) next.add(file.path);
    else next.delete(file.path);
  }
  return next;
}

/**
 * The selection restricted to documents that are still listed and selectable, as
 * `{paths, docIds}` (a refreshed list may have lost some, or they may be pending again).
 */
export function resolveSelection(
  docs: readonly DocumentInfo[],
  selected: ReadonlySet<string>,
): { paths: Set<string>; docIds: string[] } {
  const paths = new Set<string>();
  const docIds: string[] = [];
  for (const doc of docs) {
    if (doc.doc_id !== null && selected.has(doc.relative_path)) {
      paths.add(doc.relative_path);
      docIds.push(doc.doc_id);
    }
  }
  return { paths, docIds };
}

/** Statuses the folder sensor is still working on: the list is worth re-reading. */
export const TRANSITIONAL: readonly DocumentStatus[] = ["pending", "outdated", "missing"];

/** Counts per status of the files below `folder`. */
export function statusCounts(folder: FolderNode): Partial<Record<DocumentStatus, number>> {
  const counts: Partial<Record<DocumentStatus, number>> = {};
  for (const file of descendantFiles(folder)) {
    counts[file.doc.status] = (counts[file.doc.status] ?? 0) + 1;
  }
  return counts;
}

/**
 * "contextualized n/m" while the blurb stage is still writing a document's blurbs
 * (the document is searchable already, its chunks improve as blurbs land); null otherwise.
 */
export function contextualizationProgress(doc: DocumentInfo): string | null {
  if (!doc.contextualizing || doc.n_chunks === null) return null;
  return `contextualized ${doc.n_contextualized ?? 0}/${doc.n_chunks}`;
}

/** The list is worth re-reading: the sensor has files to ingest or blurbs to write. */
export function stillWorking(docs: readonly DocumentInfo[]): boolean {
  return docs.some((d) => TRANSITIONAL.includes(d.status) || d.contextualizing);
}
