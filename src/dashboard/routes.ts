import { Effect, Result } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { HttpConfig } from "../http/HttpConfig.js"
import { type Asset, IMPORTS, loadAssets } from "./assets.js"

export const DASHBOARD_PATH = "/dashboard"

/**
 * Every URL of the page is relative to it (`./dashboard/assets/...` from `<base>/dashboard`), so it
 * works under whatever path the engine is mounted at without knowing that path. (An import map
 * takes a relative URL only with its "./".)
 */
const ASSETS = "./dashboard/assets/"

const importMap = JSON.stringify({ imports: Object.fromEntries(Object.entries(IMPORTS).map(([k, v]) => [k, `${ASSETS}${v}`])) })

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>genjobs dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}dashboard.css">
<script type="importmap">${importMap}</script>
<script type="module" src="${ASSETS}app.js"></script>
</head>
<body>
<div id="app"><p class="loading">Loading the dashboard…</p></div>
<noscript><p>The dashboard needs JavaScript.</p></noscript>
</body>
</html>
`

/**
 * Scripts and styles from this server only (the import map by its hash), calls to this server
 * only, no framing, no forms posted anywhere. Pictures, sounds and videos from anywhere: job
 * outputs are served by the files adapter's public URL, which may be a bucket or a CDN.
 */
const CSP = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${createHash("sha256").update(importMap).digest("base64")}'`,
  "style-src 'self'",
  "img-src * data: blob:",
  "media-src * data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const PAGE_HEADERS = {
  "content-security-policy": CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  // The page holds no data (everything comes from the admin API), but is small enough to never cache.
  "cache-control": "no-store"
}

const notFound = HttpServerResponse.text("Not found", { status: 404, headers: { "x-content-type-options": "nosniff" } })

const serveAsset = (asset: Asset | undefined, request: HttpServerRequest.HttpServerRequest) => {
  if (asset === undefined) return notFound
  const headers = { etag: asset.etag, "cache-control": "no-cache", "x-content-type-options": "nosniff" }
  if (request.headers["if-none-match"] === asset.etag) return HttpServerResponse.empty({ status: 304, headers })
  return HttpServerResponse.uint8Array(asset.body, { contentType: asset.contentType, headers })
}

/**
 * The operator dashboard: one page at /dashboard and its files under /dashboard/assets/. It is a
 * client of the admin API (no routes of its own beyond these files), served while the admin API
 * is on and `dashboard` is not turned off.
 */
export const DashboardRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const config = yield* HttpConfig
    const adminApiOn = config.adminToken !== undefined || config.adminTokens.length > 0
    if (!config.dashboard || !adminApiOn) return
    const loaded = Result.try(loadAssets)
    if (Result.isFailure(loaded)) {
      // The engine serves on without it: a host that bundles genjobs may not ship its files.
      const reason = `The dashboard's files cannot be read (${loaded.failure}). If a bundler packs genjobs ` +
        "into your server without its files, leave genjobs out of the bundle (Next.js: serverExternalPackages); see docs/dashboard.md."
      yield* Effect.logWarning(reason)
      yield* router.add("GET", DASHBOARD_PATH, HttpServerResponse.text(reason, { status: 503 }))
      return
    }
    const assets = loaded.success
    yield* router.add(
      "GET",
      DASHBOARD_PATH,
      Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
        // The router ignores a trailing slash; relative URLs do not, so "/dashboard/" is sent to "/dashboard".
        new URL(request.url, "http://x").pathname.endsWith("/")
          ? HttpServerResponse.empty({ status: 308, headers: { location: `../dashboard` } })
          : HttpServerResponse.text(PAGE, { contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS }))
    )
    yield* router.add(
      "GET",
      `${DASHBOARD_PATH}/assets/:name`,
      Effect.gen(function*() {
        const { name } = yield* HttpRouter.params
        return serveAsset(assets.get(name ?? ""), yield* HttpServerRequest.HttpServerRequest)
      })
    )
  })
)
