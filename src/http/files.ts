import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, FiberRef, Option } from "effect"
import { engineError } from "../domain/errors.js"
import { UPLOAD_ID_PREFIX } from "../domain/upload.js"
import { BlobStore } from "../ports/BlobStore.js"
import { UploadRepo } from "../ports/UploadRepo.js"
import { requestedRange } from "./byteRange.js"
import { ApiFailure } from "./errorEnvelope.js"
import { CurrentRequestId } from "./requestContext.js"

const OUTPUT_MAX_AGE_SECONDS = 3600

const notFound = Effect.flatMap(FiberRef.get(CurrentRequestId), (requestId) =>
  Effect.fail(ApiFailure.fromEngine(engineError("NOT_FOUND", "No such file"), requestId)))

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
    const found = Option.isSome(maxAge) ? yield* blobs.stat(key) : Option.none()
    if (Option.isNone(maxAge) || Option.isNone(found)) return yield* notFound
    const wanted = requestedRange(found.value.size, request.headers["range"])
    if (wanted._tag === "Unsatisfiable") {
      return HttpServerResponse.empty({ status: 416, headers: { "content-range": `bytes */${found.value.size}` } })
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
