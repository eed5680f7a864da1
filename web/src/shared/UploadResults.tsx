/** One row per uploaded file: stored, replaced, unchanged, or refused with its reason. */

const OUTCOME_TEXT: Record<string, string> = {
  stored: "stored",
  replaced: "replaced (content changed)",
  unchanged: "unchanged (same bytes already there)",
  refused: "refused",
};

export interface UploadRow {
  index: number;
  name: string;
  status: string;
  /** Where the file is stored (null when refused). */
  stored: string | null;
  code: string | null;
  message: string | null;
}

export function UploadResults({ summary, rows }: { summary: string; rows: UploadRow[] }) {
  return (
    <div className="upload-results">
      <p>
        <strong>Upload:</strong> {summary}.
      </p>
      <div className="table-scroll">
        <table>
          <caption className="visually-hidden">Upload results, one row per file</caption>
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Result</th>
              <th scope="col">Stored as</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.index} className={`upload-${r.status}`} data-name={r.name}>
                <td>{r.name}</td>
                <td>
                  <span className={`pill-status upload-status-${r.status}`}>
                    {OUTCOME_TEXT[r.status] ?? r.status}
                  </span>
                </td>
                <td>{r.status === "refused" || r.stored === null ? "\u2014" : <code>{r.stored}</code>}</td>
                <td>
                  {r.code ? (
                    <>
                      <code>{r.code}</code> {r.message}
                    </>
                  ) : (
                    "\u2014"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
