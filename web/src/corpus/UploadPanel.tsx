/** Upload files or a whole folder into the corpus folder, with each file's outcome. */
import { useState, type ChangeEvent } from "react";

import { describeError } from "../api/client";
import { uploadDocuments } from "../api/resources";
import type { UploadResponse } from "../api/types";
import { uploadForm, uploadSummary } from "./upload";
import { UploadResults } from "../shared/UploadResults";

interface UploadPanelProps {
  /** Files landed: the folder sensor takes it from here. */
  onUploaded: () => void;
}

export function UploadPanel({ onUploaded }: UploadPanelProps) {
  const [into, setInto] = useState("");
  const [busy, setBusy] = useState<string | null>(null);
  const [result, setResult] = useState<UploadResponse | null>(null);
  const [error, setError] = useState<string | null>(null);

  const upload = async (event: ChangeEvent<HTMLInputElement>) => {
    const input = event.currentTarget;
    const files = Array.from(input.files ?? []);
    input.value = ""; // picking the same files again must fire `change` again
    if (files.length === 0) return;
    setBusy(`Uploading ${files.length} file${files.length === 1 ? "" : "s"}\u2026`);
    setError(null);
    setResult(null);
    try {
      setResult(await uploadDocuments(uploadForm(files, into)));
      onUploaded();
    } catch (exc) {
      setError(`The upload failed: ${describeError(exc)}`);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section className="upload" aria-labelledby="upload-heading">
      <h3 id="upload-heading">Add documents</h3>
      <p className="hint">
        Files land in the corpus folder; the Dagster folder sensor indexes them within seconds. Their status
        below goes from pending to indexed.
      </p>
      <div className="upload-controls">
        <label className="file-pick">
          Upload files
          <input type="file" multiple disabled={busy !== null} onChange={(e) => void upload(e)} />
        </label>
        <label className="file-pick">
          Upload a folder
          <input
            type="file"
            disabled={busy !== null}
            // not in React's attribute list: set it on the element
            ref={(el) => el?.setAttribute("webkitdirectory", "")}
            onChange={(e) => void upload(e)}
          />
        </label>
        <label className="upload-into">
          <span>
            Into folder <span className="muted">(optional)</span>
          </span>
          <input
            type="text"
            value={into}
            placeholder="e.g. manuals/2024"
            onChange={(e) => setInto(e.target.value)}
          />
        </label>
      </div>
      <div aria-live="polite">
        {busy && <p className="muted">{busy}</p>}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {result && (
          <UploadResults
            summary={uploadSummary(result)}
            rows={result.results.map((r) => ({ ...r, stored: r.relative_path }))}
          />
        )}
      </div>
    </section>
  );
}
