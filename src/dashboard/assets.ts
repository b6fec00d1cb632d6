import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, extname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** A file the dashboard's page loads, held in memory: the whole set is some 300 KB. */
export interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8"
}

interface Vendored {
  readonly name: string
  readonly specifier: string
  /** The package that depends on this one, to resolve it from there (a nested install keeps it beside that package). */
  readonly from?: string
  /** The browser build beside the file the specifier resolves to. */
  readonly browserBuild: (resolved: string) => string
}

/** Preact's and htm's main files are CommonJS; their `.module.js` siblings are the ES modules. */
const moduleSibling = (resolved: string) => resolved.replace(/\.js$/, ".module.js")
/** d3's packages resolve to their single-file ES module builds (dist/*.mjs), which import each other by bare name. */
const asResolved = (resolved: string) => resolved

/**
 * The UI toolkit's and the charts' ES module builds, served under the names the page's import
 * map gives them. Each is found through the package's own resolution (so the copy installed
 * beside genjobs is used). d3-scale and d3-shape draw the charts; the rest are what they import.
 */
const VENDOR: ReadonlyArray<Vendored> = [
  { name: "preact.js", specifier: "preact", browserBuild: moduleSibling },
  { name: "preact-hooks.js", specifier: "preact/hooks", browserBuild: moduleSibling },
  { name: "htm.js", specifier: "htm", browserBuild: moduleSibling },
  { name: "htm-preact.js", specifier: "htm/preact", browserBuild: moduleSibling },
  { name: "d3-scale.js", specifier: "d3-scale", browserBuild: asResolved },
  { name: "d3-array.js", specifier: "d3-array", from: "d3-scale", browserBuild: asResolved },
  { name: "d3-format.js", specifier: "d3-format", from: "d3-scale", browserBuild: asResolved },
  { name: "d3-interpolate.js", specifier: "d3-interpolate", from: "d3-scale", browserBuild: asResolved },
  { name: "d3-color.js", specifier: "d3-color", from: "d3-interpolate", browserBuild: asResolved },
  { name: "d3-time.js", specifier: "d3-time", from: "d3-scale", browserBuild: asResolved },
  { name: "d3-time-format.js", specifier: "d3-time-format", from: "d3-scale", browserBuild: asResolved },
  { name: "d3-shape.js", specifier: "d3-shape", browserBuild: asResolved },
  { name: "d3-path.js", specifier: "d3-path", from: "d3-shape", browserBuild: asResolved }
]

/** The import map's entries: bare specifiers to the vendored files' names. */
export const IMPORTS: Readonly<Record<string, string>> = Object.fromEntries(VENDOR.map(({ name, specifier }) => [specifier, name]))

const asset = (body: Uint8Array, contentType: string): Asset => ({
  body,
  contentType,
  etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`
})

/**
 * Every asset by the name it is served under; throws when a file cannot be read.
 *
 * The browser code is plain ES modules in `ui/` beside this module, run as written (no bundler,
 * here or at the embedder's); the build copies them beside the compiled module in dist/. Paths
 * are worked out at run time from this module's own file: bundlers (Next.js's) turn the static
 * forms, `new URL("./ui/", import.meta.url)` and `createRequire(import.meta.url)`, into
 * imports of their own.
 */
export const loadAssets = (): ReadonlyMap<string, Asset> => {
  const self = fileURLToPath(import.meta.url)
  const uiDir = join(dirname(self), "ui")
  const assets = new Map<string, Asset>()
  for (const file of readdirSync(uiDir)) {
    const contentType = CONTENT_TYPES[extname(file)]
    if (contentType !== undefined) assets.set(file, asset(readFileSync(join(uiDir, file)), contentType))
  }
  // Each package's file as resolved from the package that depends on it (VENDOR lists dependents first).
  const resolved = new Map<string, string>()
  for (const { browserBuild, from, name, specifier } of VENDOR) {
    const file = createRequire(from === undefined ? self : resolved.get(from)!).resolve(specifier)
    resolved.set(specifier, file)
    assets.set(name, asset(readFileSync(browserBuild(file)), CONTENT_TYPES[".js"]!))
  }
  return assets
}
