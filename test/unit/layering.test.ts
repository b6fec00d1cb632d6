import { readdirSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** Every module a file names in an import or export, static or dynamic, as a path from the root. */
const importsOf = (file: string): Array<string> =>
  [...readFileSync(file, "utf8").matchAll(/(?:from\s+|import\s*\(\s*)["']([^"']+)["']/g)]
    .map((m) => m[1]!)
    .map((spec) => (spec.startsWith(".") ? relative(ROOT, resolve(file, "..", spec)) : spec))

describe("the direction of imports", () => {
  it("src/ imports nothing from adapters/, apps/ or the entries", () => {
    const offending = sources(join(ROOT, "src")).flatMap((file) =>
      importsOf(file)
        .filter((target) => /^(adapters|apps|entries)\//.test(target) || target === "genjobs" || target.startsWith("genjobs/"))
        .map((target) => `${relative(ROOT, file)} -> ${target}`)
    )
    expect(offending).toEqual([])
  })

  it("no production code imports the tests' modules (the provider simulators among them)", () => {
    const offending = ["src", "adapters", "entries", "apps"].flatMap((dir) => sources(join(ROOT, dir))).flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith("test/"))
        .map((target) => `${relative(ROOT, file)} -> ${target}`)
    )
    expect(offending).toEqual([])
  })

  it("apps/ and examples/ use only the package's public entry points", () => {
    const offending = [...sources(join(ROOT, "apps")), ...sources(join(ROOT, "examples"))].flatMap((file) =>
      importsOf(file)
        .filter((target) => /^(src|adapters|entries)\//.test(target))
        .map((target) => `${relative(ROOT, file)} -> ${target}`)
    )
    expect(offending).toEqual([])
  })
})
