/** Links into the Dagster UI: the lineage behind a citation. */

/** The asset that holds one corpus file per partition (varagity/pipeline.py: INDEXED_ASSET). */
export const INDEXED_DOCUMENT_ASSET = "indexed_document";

/**
 * The Dagster webserver URL the API put into the page (`<meta name="varagity-dagster-url">`),
 * or `null` when the page was not served by the API (the Vite dev server).
 */
export function dagsterUrlFrom(doc: Document): string | null {
  const content = doc.querySelector('meta[name="varagity-dagster-url"]')?.getAttribute("content");
  if (!content || content.includes("{{")) return null;
  return content.replace(/\/+$/, "");
}

/** The partition page of one document (partition key = path relative to DOCS_PATH). */
export function partitionUrl(dagsterUrl: string, relativePath: string): string {
  const base = dagsterUrl.replace(/\/+$/, "");
  return `${base}/assets/${INDEXED_DOCUMENT_ASSET}?view=partitions&partition=${encodeURIComponent(relativePath)}`;
}
