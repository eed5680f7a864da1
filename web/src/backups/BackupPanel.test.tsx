import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { BackupController } from "./useBackups";
import { backupRun, bundle } from "../test/fixtures";
import { BackupPanel } from "./BackupPanel";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

function controller(overrides: Partial<BackupController> = {}): BackupController {
  return {
    corpus: "rag",
    list: {
      corpus: "rag",
      folder: "/srv/docs/varagity-exports",
      current: { documents: 3, chunks: 20 },
      bundles: [
        bundle(),
        bundle({
          name: "varagity-rag-20261101-0900.zip",
          ok: false,
          code: "bundle_incompatible",
          detail: "exported with embedding model e5-small; this stack embeds with all-MiniLM-L6-v2",
        }),
        bundle({ name: "drifted.zip", drift: [{ setting: "CHUNK_SIZE", bundle: "400", current: "800" }] }),
      ],
    },
    run: null,
    busy: false,
    error: null,
    refresh: () => undefined,
    exportNow: () => undefined,
    restore: () => undefined,
    ...overrides,
  };
}

describe("backup panel", () => {
  it("lists bundles with their verdicts, greys refused ones with the reason, shows drift", () => {
    const page = html(<BackupPanel backups={controller()} />);
    expect(page).toContain("<code>varagity-rag-20261108-1312.zip</code>");
    expect(page).toContain("1.4 MB \u00b7 12 documents \u00b7 340 chunks");
    expect(page).toContain('<span class="pill ok"');
    expect(page).toContain('<li class="bundle refused" aria-disabled="true">');
    expect(page).toContain("refused: bundle_incompatible");
    expect(page).toContain("exported with embedding model e5-small");
    expect(page).toContain("Drift (the restored corpus is flagged stale): CHUNK_SIZE was 400, is 800 here");
    // the refused bundle cannot be restored; the others can
    expect(page.match(/<button type="button" disabled="">Restore/g)?.length).toBe(1);
    expect(page).toContain("in /srv/docs/varagity-exports");
  });

  it("shows a run's progress and disables launching while it runs", () => {
    const page = html(<BackupPanel backups={controller({ run: backupRun(), busy: true })} />);
    expect(page).toContain("Export running: chunks 1200 of 5000");
    expect(page).toContain('<button type="button" disabled="">Export</button>');
    expect(page).toContain('href="http://127.0.0.1:3000/runs/9e1b"');
  });

  it("shows errors and an empty folder", () => {
    const empty = controller({ error: "The export was not started: corpus_busy" });
    empty.list = { corpus: "rag", folder: "/d/varagity-exports", current: {}, bundles: [] };
    const page = html(<BackupPanel backups={empty} />);
    expect(page).toContain('<p class="error" role="alert">The export was not started: corpus_busy</p>');
    expect(page).toContain("No backup yet: Export writes one.");
  });
});
