import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"

const entries = fileURLToPath(new URL("./entries/", import.meta.url))

/**
 * The slow end-to-end suites, run by `npm run test:e2e` (vitest.e2e.config.ts) and left out of
 * `npm test`: those that run the built package (dist/) as processes or read it (the server, the
 * CLI, the packed tarball installed with the frameworks), S3 with 100 MiB uploads, and headless
 * Chromium. test/e2e's in-process files (composition, embedded) stay in `npm test`.
 * docs/testing.md says what each takes; test/unit/testSplit.test.ts checks that every test file
 * runs in exactly one suite.
 */
export const e2eFiles = [
  "test/e2e/cli.test.ts",
  "test/e2e/clientBrowser.test.ts",
  "test/e2e/dashboard.test.ts",
  "test/e2e/operations.test.ts",
  "test/e2e/postgres.test.ts",
  "test/e2e/s3.test.ts",
  "test/e2e/server.test.ts",
  "test/e2e/serverStart.test.ts",
  "test/e2e/sqliteSoak.test.ts",
  "test/e2e/sqliteUnderLoad.test.ts",
  "test/e2e/startOnOldNode.test.ts",
  "test/e2e/streamRelease.test.ts",
  "test/e2e/webhookReceiver.test.ts",
  "test/package/tarball.test.ts",
  "test/package/installLines.test.ts",
  "test/package/clientProjects.test.ts",
  "test/package/aiSdkProject.test.ts",
  "test/package/aiSdkBridgeProject.test.ts",
  "test/package/effectApp.test.ts",
  "test/client/server.test.ts",
  "test/client/importGraph.test.ts",
  "test/conformance/s3.test.ts",
  "test/http/docsPage.test.ts"
]

// Not through defineConfig, which would type `resolve` as optional for the configs built on this one.
export default {
  resolve: {
    // The package's own entry points, from source (the "genjobs-source" condition of package.json).
    alias: [
      { find: /^genjobs$/, replacement: `${entries}index.ts` },
      { find: /^genjobs\/(.+)$/, replacement: `${entries}$1.ts` }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    // The fault suite runs alone, through vitest.faults.config.ts (`npm run test:faults`).
    exclude: [...e2eFiles, "test/faults/**", "**/node_modules/**"],
    // What a test prints (its engine's warnings and worse) shows only when it fails.
    silent: "passed-only",
    // Files share their worker's loaded packages: loading effect, pg and the rest again for each
    // of a hundred files took most of the run's CPU (a third of the time without it). A test must
    // leave no global state behind (`--isolate` runs each file in a fresh process again).
    isolate: false,
    // Vitest's default, a worker per core but one, runs files one at a time on 2 cores, while a
    // file often waits on PostgreSQL or timers: two at once.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // No build: nothing here runs dist/. Only this run's PostgreSQL databases.
    globalSetup: ["test/databaseSetup.ts"]
  }
} satisfies ViteUserConfig
