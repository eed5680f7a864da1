/** The drawer's footer: how the last save went (announced) and the Save button with the change count. */

export function SaveBar({
  errorCount,
  general,
  notice,
  saving,
  changes,
}: {
  /** Settings with an error next to them. */
  errorCount: number;
  /** Errors no setting is named in. */
  general: string[];
  notice: string | null;
  saving: boolean;
  /** Settings that differ from their current value. */
  changes: number;
}) {
  return (
    <div className="drawer-footer">
      <div aria-live="polite" className="save-status">
        {errorCount > 0 && (
          <p className="field-error">
            {errorCount === 1 ? "1 setting needs" : `${errorCount} settings need`} a fix; nothing was saved.
          </p>
        )}
        {general.map((message) => (
          <p key={message} className="field-error">
            {message}
          </p>
        ))}
        {notice && <p className="saved">{notice}</p>}
      </div>
      <button type="submit" className="primary" disabled={saving}>
        {saving ? "Saving\u2026" : changes > 0 ? `Save ${changes} change${changes === 1 ? "" : "s"}` : "Save"}
      </button>
    </div>
  );
}
