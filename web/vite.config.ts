import { fileURLToPath } from "node:url";

import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The API serves the build: `create_app` returns its index.html at `/` and mounts
// `assets/` at `/assets`, so the output lands inside the Python package.
const outDir = fileURLToPath(new URL("../varagity_api/static/app", import.meta.url));

export default defineConfig({
  plugins: [react()],
  build: { outDir, emptyOutDir: true, sourcemap: true },
  // `npm run dev` proxies the API so the client talks to a running `varagity up`.
  server: { proxy: { "/api": "http://127.0.0.1:8000" } },
  test: { environment: "node", include: ["src/**/*.test.ts", "src/**/*.test.tsx"] },
});
