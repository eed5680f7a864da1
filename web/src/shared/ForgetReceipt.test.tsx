import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { ForgetReceipt } from "../api/types";
import { ForgetReceiptView } from "./ForgetReceipt";

const RECEIPT: ForgetReceipt = {
  forget_id: "4f0c2a9e1b7d4c21a0e5d3c8b9f61a22",
  kind: "documents",
  target: "reports/harbour.pdf",
  forgotten_at: "2026-12-05T03:00:00Z",
  verified: true,
  stores: [
    {
      store: "chunks",
      label: "Chunks (Postgres)",
      removed: 3,
      remaining: 0,
      updated: 0,
      verified: true,
      note: null,
    },
    {
      store: "bm25",
      label: "BM25 entries (tantivy)",
      removed: 3,
      remaining: 0,
      updated: 0,
      verified: true,
      note: null,
    },
    {
      store: "reply_cache",
      label: "LLM reply cache",
      removed: 0,
      remaining: 0,
      updated: 0,
      verified: true,
      note: "document answers are never cached: nothing to remove",
    },
  ],
  backups: [
    { corpus: "rag", name: "varagity-rag-20261205-0250.zip", created_at: null, holds: "1 document(s)" },
  ],
  notes: ["1 file(s) removed from the corpus folder"],
};

function html(receipt: ForgetReceipt): string {
  return renderToStaticMarkup(<ForgetReceiptView receipt={receipt} />).replace(/<!-- -->/g, "");
}

describe("ForgetReceiptView", () => {
  it("shows each store's removed count, what is still held and whether it was verified", () => {
    const page = html(RECEIPT);
    expect(page).toContain("Verified gone from every store.");
    expect(page).toMatch(
      /data-store="chunks"><th[^>]*>Chunks \(Postgres\)<\/th><td>3<\/td><td>0<\/td><td>yes<\/td>/,
    );
    expect(page).toContain("document answers are never cached");
    expect(page).not.toContain("Updated"); // no store kept a changed entry
    expect(page).toContain("Backups that still hold it:");
    expect(page).toContain("<code>varagity-rag-20261205-0250.zip</code> (1 document(s))");
    expect(page).toContain("1 file(s) removed from the corpus folder");
  });

  it("says so when a store still holds some of it, and when no backup does", () => {
    const page = html({
      ...RECEIPT,
      verified: false,
      backups: [],
      stores: [
        {
          store: "graph_entities",
          label: "Graph entities",
          removed: 4,
          remaining: 1,
          updated: 2,
          verified: false,
          note: null,
        },
      ],
    });
    expect(page).toContain("Not verified: a store still holds some of it.");
    expect(page).toMatch(
      /data-store="graph_entities"><th[^>]*>Graph entities<\/th><td>4<\/td><td>2<\/td><td>1<\/td><td>no<\/td>/,
    );
    expect(page).toContain("No backup holds it.");
  });
});
