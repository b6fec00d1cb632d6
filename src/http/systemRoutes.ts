import { Context, Effect, Stream } from "effect"
import { HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ValidationError } from "../domain/errors.js"
import { BlobStore } from "../ports/BlobStore.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"
import { Providers } from "../ports/Provider.js"
import { UploadRepo } from "../ports/UploadRepo.js"
import { Catalog } from "../services/Catalog.js"
import { receiveUpload, UploadSigningSecret } from "../services/Uploads.js"
import { serveFile } from "./files.js"
import { readiness } from "./readiness.js"
import { PROVIDER_CALLBACK_ROUTE, receiveProviderCallback } from "./providerCallbacks.js"
import { CurrentRequestId } from "./requestContext.js"

/** The prefix under which stored files are served; PUBLIC_URL + this makes their URLs. */
export const FILES_PATH = "/files"

/**
 * Upload and file URLs are capabilities handed to browsers on other origins, and no cookie or
 * key goes with them, so any origin may use them: their answers, errors included, allow it.
 */
const CORS = { "access-control-allow-origin": "*", "access-control-expose-headers": "x-request-id" }

const withCors = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.andThen(HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, CORS))), handler)

/**
 * GET /health (the process answers: liveness), GET /health/ready (its store and queue answer:
 * readiness, readiness.ts), PUT /uploads/{id} (signed filesystem upload URLs), stored files under /files/{key},
 * and providers' callbacks (POST /v1/providers/{providerId}/callbacks/{jobId}).
 */
export const SystemRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    // Only these services: the layer's whole context holds its Scope too, which would stand in for
    // each request's own (Effect 4's provide merges) and gather the requests' finalizers.
    const context = yield* Effect.context<UploadRepo | BlobStore | UploadSigningSecret | JobRepo | Catalog | JobEvents>()
    const fileServices = Context.pick(UploadRepo, BlobStore)(context)
    const uploadServices = Context.pick(UploadRepo, BlobStore, UploadSigningSecret)(context)
    const callbackServices = Context.pick(JobRepo, Catalog, JobEvents)(context)
    // Optional for now: an engine composed without providers answers every callback 404.
    const providers = yield* Effect.serviceOption(Providers)
    yield* router.add("GET", "/health", HttpServerResponse.json({ status: "ok" }))
    yield* router.add("GET", "/health/ready", yield* readiness)
    yield* router.add("OPTIONS", 
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
    yield* router.add("PUT", 
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
            Stream.mapError(() => new ValidationError({ message: "The upload body could not be read to its end" }))
          )
        ).pipe(Effect.provide(uploadServices))
        return yield* HttpServerResponse.json({ success: true, data: { id, size: received }, requestId: yield* CurrentRequestId })
      }))
    )
    yield* router.add("POST", PROVIDER_CALLBACK_ROUTE, receiveProviderCallback(providers).pipe(Effect.provide(callbackServices)))
    yield* router.add("GET", 
      `${FILES_PATH}/:key`,
      withCors(Effect.gen(function*() {
        const { key } = yield* HttpRouter.params
        return yield* serveFile(key ?? "").pipe(Effect.provide(fileServices))
      }))
    )
  })
)
