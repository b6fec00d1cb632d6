/**
 * What `npm publish` needs from package.json, checked without packing: every file an export or
 * the bin names is inside `files`, each export has its types, and the metadata npm shows and
 * checks is there. The e2e tarball suites pack and install the result.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
const files: Array<string> = pkg.files
const included = files.filter((f) => !f.startsWith("!"))
const excluded = files.filter((f) => f.startsWith("!")).map((f) => f.slice(1))

/** A `files` pattern as npm reads it: a folder takes what is under it; `**` and `*` glob. */
const matches = (pattern: string, path: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "(.*/)?").replace(/\*/g, "[^/]*")}(/.*)?$`).test(path)
const published = (path: string) => {
  const relative = path.replace(/^\.\//, "")
  // npm always packs package.json, whatever `files` says.
  if (relative === "package.json") return true
  return included.some((p) => matches(p, relative)) && !excluded.some((p) => matches(p, relative))
}

const exportsOf = Object.entries(pkg.exports as Record<string, string | Record<string, string>>)

describe("package.json has what npm publish needs", () => {
  it("name, a semver version, a license with its file, a description, ESM", () => {
    expect(pkg.name).toBe("genjobs")
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?$/)
    expect(pkg.private).toBeUndefined()
    expect(pkg.license).toBe("MIT")
    expect(existsSync(join(ROOT, "LICENSE"))).toBe(true)
    expect(files).toEqual(expect.arrayContaining(["README.md", "LICENSE"]))
    expect(pkg.description.length).toBeGreaterThan(20)
    expect(pkg.type).toBe("module")
  })

  it("engines names the Node versions the README supports: 22.19 (Effect 4's platform) and newer", () => {
    expect(pkg.engines).toEqual({ node: ">=22.19" })
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain("Node 22.19+ or 24")
  })

  it("every export's built JavaScript and declarations are in the published files", () => {
    const missing: Array<string> = []
    for (const [subpath, target] of exportsOf) {
      if (typeof target === "string") {
        if (!published(target)) missing.push(`${subpath}: ${target}`)
        continue
      }
      for (const condition of ["types", "default"]) {
        const file = target[condition]
        if (file === undefined || !published(file)) missing.push(`${subpath} ${condition}: ${file}`)
      }
      // The declarations beside their module, as tsc emits them.
      expect(target["types"], subpath).toBe(target["default"]!.replace(/\.js$/, ".d.ts"))
      // The source condition is for this repository's tests only and must not ship.
      expect(published(target["genjobs-source"]!), subpath).toBe(false)
    }
    expect(missing).toEqual([])
  })

  it("the bin is published and is the CLI", () => {
    expect(pkg.bin).toEqual({ genjobs: "dist/apps/cli/main.js" })
    expect(published(pkg.bin.genjobs)).toBe(true)
    expect(readFileSync(join(ROOT, "apps/cli/main.ts"), "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true)
  })

  it("no build leftovers ship", () => {
    expect(published("dist/entries/index.tsbuildinfo")).toBe(false)
    expect(published("src/engine.ts")).toBe(false)
    expect(published("test/package/tarball.test.ts")).toBe(false)
  })
})
