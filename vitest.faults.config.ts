import { defineConfig } from "vitest/config"
import base from "./vitest.config.js"

/**
 * The fault suite (test/faults, `npm run test:faults`): real server processes on PostgreSQL,
 * killed and cut off on purpose. Files run one at a time: each starts several processes, and
 * some assertions are about latency, which other files' processes on the same cores would blur.
 */
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: ["test/faults/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 60_000,
    globalSetup: ["test/globalSetup.ts"]
  }
})
