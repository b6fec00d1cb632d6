import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const entries = fileURLToPath(new URL("./entries/", import.meta.url))

export default defineConfig({
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
    exclude: ["test/faults/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["test/globalSetup.ts"]
  }
})
