/** The multipart body of `POST /api/documents/upload`, and a summary of its answer. */
import type { UploadResponse } from "../api/types";

/**
 * One `files` part per file, each followed by its `paths` and `mtimes` entries so the
 * three lists stay parallel: the path is the folder-relative one a folder picker gives
 * (`webkitRelativePath`) or else the file name, the time is `File.lastModified` in ms
 * (the server restamps the stored file with it). `folder`, when given, is the folder
 * under the corpus every file goes into.
 */
export function uploadForm(files: readonly File[], folder = ""): FormData {
  const form = new FormData();
  for (const file of files) {
    form.append("files", file, file.name);
    form.append("paths", file.webkitRelativePath || file.name);
    form.append("mtimes", String(file.lastModified));
  }
  const into = folder.trim().replace(/^\/+|\/+$/g, "");
  if (into) form.append("folder", into);
  return form;
}

const OUTCOMES = ["stored", "replaced", "unchanged", "refused"] as const;

/** "2 stored · 1 refused": the counts per outcome, in a fixed order. */
export function uploadSummary<T extends Pick<UploadResponse, "counts">>(response: T): string {
  const parts = OUTCOMES.filter((o) => (response.counts[o] ?? 0) > 0).map(
    (o) => `${response.counts[o]} ${o}`,
  );
  return parts.join(" \u00b7 ") || "nothing uploaded";
}
