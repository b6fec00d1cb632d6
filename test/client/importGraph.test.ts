import { existsSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const DIST = join(ROOT, "dist")
/** Packages a browser bundle of the Effect client may load (Effect 4's HTTP client is in effect itself). */
const ALLOWED_PACKAGES = /^effect(\/|$)/
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
/** What an install of genjobs always brings: its dependencies and its peers that are not optional. */
const ALWAYS_INSTALLED = [
  ...Object.keys(pkg.dependencies),
  ...Object.keys(pkg.peerDependencies).filter((name) => pkg.peerDependenciesMeta?.[name]?.optional !== true)
]
/** The package a specifier names: "@effect/sql-pg" of "@effect/sql-pg/PgClient". */
const packageOf = (spec: string) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/")

/**
 * Every module the built entry loads, following relative imports, with what each names outside
 * the package. The built JavaScript, not the source: it is what runs, and type-only imports are
 * gone from it (or, from a .d.ts, the declarations an app's TypeScript reads). Dynamic imports with a literal specifier count: bundlers follow them too.
 */
const graphOf = (entry: string) => {
  const files = new Set<string>()
  const packages: Array<string> = []
  const visit = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    const text = readFileSync(file, "utf8")
    for (const [, spec] of text.matchAll(/(?:from\s+|import\s*\(\s*|^import\s+)["']([^"']+)["']/gm)) {
      // A declaration file names its neighbours by their .js.
      const local = file.endsWith(".d.ts") ? spec!.replace(/\.js$/, ".d.ts") : spec!
      if (spec!.startsWith(".")) visit(resolve(dirname(file), local))
      else packages.push(`${relative(DIST, file)} -> ${spec}`)
    }
  }
  visit(join(DIST, entry))
  return { files: [...files].map((f) => relative(DIST, f)), packages }
}

describe("genjobs/client loads in browsers, and in apps without effect", () => {
  const { files, packages } = graphOf("entries/client.js")

  it("is built", () => {
    expect(existsSync(join(DIST, "entries/client.js"))).toBe(true)
    expect(files).toContain("src/client/createClient.js")
  })

  it("imports no package and no Node module", () => {
    expect(packages).toEqual([])
  })

  it("loads nothing of the server: no services, adapters, apps or HTTP definitions", () => {
    expect(files.filter((f) => /^(src\/services|src\/http|adapters|apps)\//.test(f))).toEqual([])
  })

  // An app's TypeScript reads these: one naming effect would fail a strict build without it.
  it("its declarations name no package either", () => {
    const declarations = graphOf("entries/client.d.ts")
    expect(declarations.files).toContain("src/client/types.d.ts")
    expect(declarations.packages).toEqual([])
  })
})

describe("genjobs/client/effect loads in browsers", () => {
  const { files, packages } = graphOf("entries/client/effect.js")

  it("imports no Node module, and only effect", () => {
    expect(files).toContain("src/http/Api.js")
    const other = packages.filter((p) => {
      const spec = p.split(" -> ")[1]!
      return spec.startsWith("node:") || builtinModules.includes(spec) || !ALLOWED_PACKAGES.test(spec)
    })
    expect(other).toEqual([])
  })

  it("loads nothing of the server: no services, adapters or apps", () => {
    expect(files.filter((f) => /^(src\/services|adapters|apps)\//.test(f))).toEqual([])
  })
})

// A bundler (Next.js) packing an app's server resolves every module these entries reach, static or
// literal `import()`: one optional peer among them fails the app's build unless it is installed.
describe("the main entry and the entries of an in-memory engine reach no optional peer", () => {
  for (const entry of ["index", "http", "memory", "testing"]) {
    it(`genjobs${entry === "index" ? "" : `/${entry}`}`, () => {
      const { files, packages } = graphOf(`entries/${entry}.js`)
      expect(files.length).toBeGreaterThan(1)
      const optional = packages.filter((p) => {
        const spec = p.split(" -> ")[1]!
        return !spec.startsWith("node:") && !builtinModules.includes(spec) && !ALWAYS_INSTALLED.includes(packageOf(spec))
      })
      expect(optional).toEqual([])
    })
  }
})

// An app installs the driver of the store it uses and no other: each store entry reaches only its
// own driver's packages (a bundler would fail on the other's, and Node would load it). SQLite's
// driver is Node's own and its SQL layer is in effect: it needs no optional peer; PostgreSQL's is
// @effect/sql-pg alone (it speaks the protocol itself, without pg).
describe("each store entry reaches only its own driver", () => {
  const stores = [
    ["sqlite", []],
    ["postgres", ["@effect/sql-pg"]]
  ] as const
  for (const [entry, drivers] of stores) {
    it(`genjobs/${entry} loads ${drivers.length === 0 ? "no optional peer" : `${drivers.join(", ")} and no other optional peer`}`, () => {
      const { packages } = graphOf(`entries/${entry}.js`)
      const optional = new Set(packages.map((p) => packageOf(p.split(" -> ")[1]!)).filter((name) =>
        !name.startsWith("node:") && !builtinModules.includes(name) && !ALWAYS_INSTALLED.includes(name)
      ))
      expect([...optional].sort()).toEqual([...drivers].sort())
    })
  }
})
