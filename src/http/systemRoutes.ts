import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, FiberRef, Option, Stream } from "effect"
import { engineError } from "../domain/errors.js"
import { UPLOAD_ID_PREFIX } from "../domain/upload.js"
import { BlobStore } from "../ports/BlobStore.js"
import { requestedRange } from "./byteRange.js"
import { ApiFailure, renderFailure } from "./errorEnvelope.js"
import { UploadRepo } from "../ports/UploadRepo.js"
import { receiveUpload, UploadSigningSecret } from "../services/Uploads.js"
import { CurrentRequestId, toApiFailure } from "./requestContext.js"

const OUTPUT_MAX_AGE_SECONDS = 3600

/** The prefix under which stored files are served; PUBLIC_URL + this makes their URLs. */
export const FILES_PATH = "/files"

/**
 * Upload and file URLs are capabilities handed to browsers on other origins, and no cookie or
 * key goes with them, so any origin may use them: their answers, errors included, allow it.
 */
const CORS = { "access-control-allow-origin": "*", "access-control-expose-headers": "x-request-id" }

const withCors = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  handler.pipe(
    Effect.catchIf((e): e is E & ApiFailure => e instanceof ApiFailure, (failure) => Effect.succeed(renderFailure(failure))),
    Effect.map(HttpServerResponse.setHeaders(CORS))
  )

/** GET /health, PUT /uploads/{id} (signed filesystem upload URLs), and stored files under /files/{key}. */
export const SystemRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const uploads = yield* UploadRepo
    const uploadServices = yield* Effect.context<UploadRepo | BlobStore | UploadSigningSecret>()
    yield* router.get("/health", HttpServerResponse.json({ status: "ok" }))
    yield* router.options(
      "/uploads/:id",
      HttpServerResponse.empty({
        status: 204,
        headers: {
          ...CORS,
          "access-control-allow-methods": "PUT",
          "access-control-allow-headers": "content-type",
          "access-control-max-age": "900"
        }
      })
    )
    yield* router.put(
      "/uploads/:id",
      withCors(Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = new URL(request.url, "http://x").searchParams
        const length = request.headers["content-length"]
        const received = yield* receiveUpload(
          {
            uploadId: id ?? "",
            contentType: query.get("type") ?? "",
            maxSize: Number(query.get("max")),
            size: query.has("size") ? Number(query.get("size")) : null,
            expiresAt: Number(query.get("expires"))
          },
          query.get("sig") ?? "",
          request.headers["content-type"],
          length === undefined ? undefined : Number(length),
          request.stream.pipe(
            Stream.mapError(() => engineError("VALIDATION_ERROR", "The upload body could not be read to its end"))
          )
        ).pipe(Effect.provide(uploadServices), toApiFailure)
        return yield* HttpServerResponse.json({ success: true, data: { id, size: received }, requestId: yield* FiberRef.get(CurrentRequestId) })
      }))
    )
    yield* router.get(
      `${FILES_PATH}/:key`,
      withCors(Effect.gen(function*() {
        const { key } = yield* HttpRouter.params
        const request = yield* HttpServerRequest.HttpServerRequest
        const notFound = Effect.flatMap(FiberRef.get(CurrentRequestId), (requestId) =>
          Effect.fail(ApiFailure.fromEngine(engineError("NOT_FOUND", "No such file"), requestId)))
        if (key === undefined) return yield* notFound
        // An upload's file lives exactly as long as the upload: gone the moment it expires, even
        // before the sweeper deletes it, and cached no longer than it has left.
        let maxAgeSeconds = OUTPUT_MAX_AGE_SECONDS
        if (key.startsWith(UPLOAD_ID_PREFIX)) {
          const upload = yield* uploads.get(key)
          const now = yield* Clock.currentTimeMillis
          if (Option.isNone(upload) || upload.value.status === "expired" || upload.value.expiresAt <= now) return yield* notFound
          maxAgeSeconds = Math.min(maxAgeSeconds, Math.floor((upload.value.expiresAt - now) / 1000))
        }
        const found = yield* blobs.stat(key)
        if (Option.isNone(found)) return yield* notFound
        const wanted = requestedRange(found.value.size, request.headers["range"])
        if (wanted._tag === "Unsatisfiable") {
          return HttpServerResponse.empty({ status: 416, headers: { "content-range": `bytes */${found.value.size}` } })
        }
        const blob = yield* blobs.get(key, wanted._tag === "Part" ? wanted.range : undefined)
        if (Option.isNone(blob)) return yield* notFound
        const headers = {
          "accept-ranges": "bytes",
          "cache-control": `public, max-age=${maxAgeSeconds}`,
          "x-content-type-options": "nosniff"
        }
        if (wanted._tag === "Whole") {
          return HttpServerResponse.stream(blob.value.body, { contentType: blob.value.contentType, contentLength: blob.value.size, headers })
        }
        const { end, start } = wanted.range
        return HttpServerResponse.stream(blob.value.body, {
          status: 206,
          contentType: blob.value.contentType,
          contentLength: end - start + 1,
          headers: { ...headers, "content-range": `bytes ${start}-${end}/${blob.value.size}` }
        })
      }))
    )
  })
)
