import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, extname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** A file the dashboard's page loads, held in memory: the whole set is some 80 KB. */
export interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8"
}

/**
 * The UI toolkit's ES module builds, served under the names the page's import map gives them.
 * Each is found through the package's own resolution (so the copy installed beside genjobs is
 * used) and its `.module.js` sibling is the browser build.
 */
const VENDOR: ReadonlyArray<{ readonly name: string; readonly specifier: string }> = [
  { name: "preact.js", specifier: "preact" },
  { name: "preact-hooks.js", specifier: "preact/hooks" },
  { name: "htm.js", specifier: "htm" },
  { name: "htm-preact.js", specifier: "htm/preact" }
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
  const require = createRequire(self)
  for (const { name, specifier } of VENDOR) {
    const browserBuild = require.resolve(specifier).replace(/\.js$/, ".module.js")
    assets.set(name, asset(readFileSync(browserBuild), CONTENT_TYPES[".js"]!))
  }
  return assets
}
