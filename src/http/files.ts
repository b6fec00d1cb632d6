import { Clock, Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { NotFound } from "../domain/errors.js"
import { UPLOAD_ID_PREFIX } from "../domain/upload.js"
import { BlobStore } from "../ports/BlobStore.js"
import { UploadRepo } from "../ports/UploadRepo.js"
import { type RangeRequest, requestedRange } from "./byteRange.js"

const OUTPUT_MAX_AGE_SECONDS = 3600

const notFound = Effect.fail(new NotFound({ message: "No such file" }))

/**
 * How long a file may be cached, or None when it must not be served. An upload's file lives
 * exactly as long as the upload: gone the moment it expires, even before the sweeper deletes
 * it, and cached no longer than it has left.
 */
const servableFor = (key: string) =>
  Effect.gen(function*() {
    if (!key.startsWith(UPLOAD_ID_PREFIX)) return Option.some(OUTPUT_MAX_AGE_SECONDS)
    const upload = yield* Effect.flatMap(UploadRepo, (uploads) => uploads.get(key))
    const now = yield* Clock.currentTimeMillis
    if (Option.isNone(upload) || upload.value.status === "expired" || upload.value.expiresAt <= now) return Option.none()
    return Option.some(Math.min(OUTPUT_MAX_AGE_SECONDS, Math.floor((upload.value.expiresAt - now) / 1000)))
  })

/** A stored file, streamed, whole or as the one byte range the request asks for. */
export const serveFile = (key: string) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const request = yield* HttpServerRequest.HttpServerRequest
    const maxAge = yield* servableFor(key)
    if (Option.isNone(maxAge)) return yield* notFound
    const rangeHeader = request.headers["range"]
    // A range needs the size first; a whole file (the usual request) is one lookup.
    const stored = rangeHeader === undefined ? undefined : Option.getOrUndefined(yield* blobs.stat(key))
    const wanted: RangeRequest = stored === undefined ? { _tag: "Whole" } : requestedRange(stored.size, rangeHeader)
    if (wanted._tag === "Unsatisfiable") {
      return HttpServerResponse.empty({ status: 416, headers: { "content-range": `bytes */${stored?.size}` } })
    }
    const blob = yield* blobs.get(key, wanted._tag === "Part" ? wanted.range : undefined)
    if (Option.isNone(blob)) return yield* notFound
    const { body, contentType, size } = blob.value
    const headers = {
      "accept-ranges": "bytes",
      "cache-control": `public, max-age=${maxAge.value}`,
      "x-content-type-options": "nosniff"
    }
    if (wanted._tag === "Whole") return HttpServerResponse.stream(body, { contentType, contentLength: size, headers })
    const { end, start } = wanted.range
    return HttpServerResponse.stream(body, {
      status: 206,
      contentType,
      contentLength: end - start + 1,
      headers: { ...headers, "content-range": `bytes ${start}-${end}/${size}` }
    })
  })
