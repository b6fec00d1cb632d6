import { globSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import fast, { e2eFiles } from "../../vitest.config.js"
import e2e from "../../vitest.e2e.config.js"
import faults from "../../vitest.faults.config.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/** The files a config runs: its include minus its exclude (node_modules is never under test/). */
const filesOf = (config: { readonly test?: { readonly include?: Array<string>; readonly exclude?: Array<string> } }) => {
  const glob = (patterns: ReadonlyArray<string>) =>
    new Set(globSync(patterns.filter((p) => !p.includes("node_modules")), { cwd: ROOT }))
  const excluded = glob(config.test?.exclude ?? [])
  return [...glob(config.test?.include ?? [])].filter((file) => !excluded.has(file)).sort()
}

describe("the test suites: npm test, npm run test:e2e and npm run test:faults", () => {
  const suites = { "npm test": filesOf(fast), "test:e2e": filesOf(e2e), "test:faults": filesOf(faults) }

  it("run every test file, each in exactly one of them", () => {
    const all = globSync("test/**/*.test.ts", { cwd: ROOT }).sort()
    const where = all.map((file) => [file, Object.entries(suites).filter(([, files]) => files.includes(file)).map(([name]) => name)])
    expect(where.filter(([, names]) => names.length !== 1)).toEqual([])
    expect(suites["npm test"].length).toBeGreaterThan(suites["test:e2e"].length)
  })

  it("name no end-to-end file that is not there", () => {
    expect(e2eFiles.filter((pattern) => globSync(pattern, { cwd: ROOT }).length === 0)).toEqual([])
  })
})
