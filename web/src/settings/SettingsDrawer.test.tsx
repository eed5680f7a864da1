import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { SettingsResponse } from "../api/types";
import { SettingsDrawer } from "./SettingsDrawer";
import { settingField } from "./testing";

const SETTINGS: SettingsResponse = {
  settings: [
    settingField("CHUNK_SIZE", {
      type: "integer",
      value: 600,
      environment_value: 800,
      overridden: true,
      reingest_affecting: true,
      minimum: 16,
      maximum: 20000,
      description: "Chunk size.",
    }),
    settingField("RETRIEVAL_METHOD", { type: "enum", value: "hybrid", choices: ["bm25", "hybrid"] }),
    settingField("CONTEXTUALIZE", { type: "boolean", value: false, reingest_affecting: true }),
    settingField("API_PORT", { type: "integer", value: 8000, runtime_editable: false }),
  ],
  stale: {
    reason: "ingest settings changed since the corpus was built: CHUNK_SIZE 800->600",
    since: "2026-03-01T10:00:00Z",
  },
  skipped_overrides: [],
};

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

describe("SettingsDrawer", () => {
  const page = html(
    <SettingsDrawer open onClose={() => {}} settings={SETTINGS} loadError={null} onSaved={() => {}} />,
  );

  it("renders a labelled control per editable setting from its metadata", () => {
    expect(page).toContain('<label for="setting-CHUNK_SIZE">Chunk size</label>');
    expect(page).toMatch(
      /<input type="number"[^>]*min="16" max="20000"[^>]*id="setting-CHUNK_SIZE"[^>]*value="600"/,
    );
    expect(page).toContain('aria-describedby="setting-CHUNK_SIZE-help"');
    expect(page).toMatch(/<select id="setting-RETRIEVAL_METHOD"[^>]*><option value="bm25">bm25<\/option>/);
    expect(page).toMatch(/<input type="checkbox" id="setting-CONTEXTUALIZE"/);
  });

  it("marks reingest-affecting and overridden settings, with a reset to the default", () => {
    const chunk = page.slice(
      page.indexOf('data-setting="CHUNK_SIZE"'),
      page.indexOf('data-setting="RETRIEVAL_METHOD"'),
    );
    expect(chunk).toContain("re-ingest</span>");
    expect(chunk).toContain("overridden</span>");
    expect(chunk).toContain("Without the override: 800.");
    expect(chunk).toContain("Reset to default");
    expect(page).not.toMatch(
      /data-setting="RETRIEVAL_METHOD"[\s\S]*Reset to default[\s\S]*data-setting="CONTEXTUALIZE"/,
    );
  });

  it("shows restart-only settings read-only, and the stale notice", () => {
    expect(page).not.toContain('id="setting-API_PORT"');
    expect(page).toMatch(
      /<code>API_PORT<\/code> <span class="tag">needs a restart<\/span><\/dt><dd>8000<\/dd>/,
    );
    expect(page).toContain("Re-ingest it from the banner");
  });

  it("opens at a setting the palette chose, and offers developer mode", () => {
    const at = (name: string) =>
      html(
        <SettingsDrawer
          open
          onClose={() => {}}
          settings={SETTINGS}
          loadError={null}
          onSaved={() => {}}
          focusSetting={name}
          developerMode={{ on: true, set: () => {} }}
        />,
      );
    expect(at("CHUNK_SIZE")).toContain('<div class="setting is-spotlit" data-setting="CHUNK_SIZE">');
    // a restart-only setting: its list opens at it
    expect(at("API_PORT")).toMatch(
      /<details class="read-only-settings" open="">[\s\S]*<div data-setting="API_PORT" tabindex="-1" class="is-spotlit">/,
    );
    expect(at("CHUNK_SIZE")).toMatch(
      /<input type="checkbox" id="developer-mode" checked=""\/>Developer mode/,
    );
    expect(page).not.toContain("developer-mode");
  });
});
