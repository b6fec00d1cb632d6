import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"

/** Spec section 8: model and provider lists are cached for 5 minutes. */
export const CACHE_SECONDS = 300
const MAX_ENTRIES = 10_000

interface Entry {
  readonly revision: number
  readonly at: number
  readonly body: string
  readonly etag: string
}

/**
 * JSON answers cached per catalog revision and caller for five minutes, with an ETag so clients
 * revalidate with If-None-Match (304). A new catalog revision misses every older entry at once.
 */
export const makeResponseCache = Effect.sync(() => {
  const entries = new Map<string, Entry>()
  let revisionSeen = -1

  return <E, R>(
    key: string,
    revision: number,
    compute: Effect.Effect<unknown, E, R>,
    cacheControl: string
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (revision !== revisionSeen || entries.size > MAX_ENTRIES) {
        entries.clear()
        revisionSeen = revision
      }
      let entry = entries.get(key)
      if (entry === undefined || now - entry.at >= CACHE_SECONDS * 1000) {
        const body = JSON.stringify(yield* compute)
        entry = { revision, at: now, body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` }
        entries.set(key, entry)
      }
      const request = yield* HttpServerRequest.HttpServerRequest
      const headers = { etag: entry.etag, "cache-control": cacheControl }
      const ifNoneMatch = request.headers["if-none-match"]
      if (ifNoneMatch !== undefined && ifNoneMatch.split(",").map((t) => t.trim().replace(/^W\//, "")).includes(entry.etag)) {
        return HttpServerResponse.empty({ status: 304, headers })
      }
      return HttpServerResponse.text(entry.body, { contentType: "application/json", headers })
    })
})
