import { defineConfig } from "vitest/config"
import base, { e2eFiles } from "./vitest.config.js"

/**
 * The slow end-to-end suites (`npm run test:e2e`), kept out of `npm test`: see `e2eFiles` in
 * vitest.config.ts. The global setup builds dist/ first, which these suites run.
 */
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: e2eFiles,
    exclude: ["**/node_modules/**"],
    // What a test prints (its engine's warnings and worse) shows only when it fails.
    silent: "passed-only",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["test/globalSetup.ts"]
  }
})
