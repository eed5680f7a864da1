/**
 * The receipt a delete answers with: per store, what was removed and whether asking the
 * store again found nothing of it, and the backups that still hold what was deleted
 * (they are never rewritten; delete them too to forget it everywhere).
 */
import type { ForgetReceipt, StoreReceipt } from "../api/types";

function held(store: StoreReceipt): string {
  if (store.remaining === 0) return "0";
  return `${store.remaining}`;
}

export function ForgetReceiptView({ receipt }: { receipt: ForgetReceipt }) {
  const updated = receipt.stores.some((s) => s.updated > 0);
  return (
    <div className="forget-receipt" aria-label="Deletion receipt">
      <p>
        <strong>
          {receipt.verified
            ? "Verified gone from every store."
            : "Not verified: a store still holds some of it."}
        </strong>{" "}
        <span className="muted">
          Receipt <code>{receipt.forget_id.slice(0, 8)}</code> for {receipt.target}
        </span>
      </p>
      <table className="receipt-table">
        <thead>
          <tr>
            <th scope="col">Store</th>
            <th scope="col">Removed</th>
            {updated && <th scope="col">Updated</th>}
            <th scope="col">Still held</th>
            <th scope="col">Verified</th>
          </tr>
        </thead>
        <tbody>
          {receipt.stores.map((s) => (
            <tr key={s.store} data-store={s.store}>
              <th scope="row" title={s.note ?? undefined}>
                {s.label}
                {s.note && (
                  <span className="hint">
                    {" "}
                    {"\u2014"} {s.note}
                  </span>
                )}
              </th>
              <td>{s.removed}</td>
              {updated && <td>{s.updated}</td>}
              <td>{held(s)}</td>
              <td>{s.verified ? "yes" : "no"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {receipt.backups.length > 0 ? (
        <div className="receipt-backups">
          <p>Backups that still hold it:</p>
          <ul>
            {receipt.backups.map((b) => (
              <li key={`${b.corpus}/${b.name}`}>
                <code>{b.name}</code> ({b.holds})
              </li>
            ))}
          </ul>
        </div>
      ) : (
        <p className="muted">No backup holds it.</p>
      )}
      {receipt.notes.length > 0 && (
        <ul className="hint">
          {receipt.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
