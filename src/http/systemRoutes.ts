import { HttpApiBuilder, HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Option } from "effect"
import { engineError } from "../domain/errors.js"
import { BlobStore } from "../ports/BlobStore.js"
import { ApiFailure } from "./errorEnvelope.js"
import { CurrentRequestId } from "./requestContext.js"

/** The prefix under which stored files are served; PUBLIC_URL + this makes their URLs. */
export const FILES_PATH = "/files"

/** GET /health, and the stored output files under /files/{key}. */
export const SystemRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    yield* router.get("/health", HttpServerResponse.json({ status: "ok" }))
    yield* router.get(
      `${FILES_PATH}/:key`,
      Effect.gen(function*() {
        const { key } = yield* HttpRouter.params
        const blob = key === undefined ? Option.none() : yield* blobs.get(key)
        if (Option.isNone(blob)) {
          return yield* Effect.fail(
            ApiFailure.fromEngine(engineError("NOT_FOUND", "No such file"), yield* FiberRef.get(CurrentRequestId))
          )
        }
        return HttpServerResponse.uint8Array(blob.value.bytes, {
          contentType: blob.value.contentType,
          headers: { "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" }
        })
      })
    )
  })
)
