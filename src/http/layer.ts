import { Context, Effect, type FileSystem, Layer, type Path } from "effect"
import { type Etag, type HttpPlatform, HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { EngineApi } from "./Api.js"
import { AdminAuthLive, ApiKeyAuthLive, OptionalApiKeyAuthLive } from "./authLayers.js"
import { ErrorEnvelopeMiddleware } from "./errorMiddleware.js"
import { AccountHandlers } from "./handlers/account.js"
import { AdminHandlers } from "./handlers/admin.js"
import { ChangesHandlers } from "./handlers/changes.js"
import { CatalogHandlers, ModelsHandlers } from "./handlers/catalog.js"
import { JobsHandlers } from "./handlers/jobs.js"
import { UploadsHandlers } from "./handlers/uploads.js"
import { WebhooksHandlers } from "./handlers/webhooks.js"
import { SystemRoutes } from "./systemRoutes.js"
import { DashboardRoutes } from "../dashboard/routes.js"
import { MetricsRoute } from "../observability/metricsRoute.js"
import { RequestLogMiddleware } from "../observability/requestLog.js"

/**
 * The reference page at /docs. It inlines Scalar's bundle and the document; without its default
 * web fonts it loads nothing from another host, so it works offline and behind strict egress
 * rules. HttpApiScalar.layer imports that bundle (3.2 MB of JavaScript, about 230 ms of CPU) as
 * its layer is built: built here on the page's first request, so a process that never serves
 * the page (a worker, an API under load) never pays it at start.
 */
const DocsRoute = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const scope = yield* Effect.scope
  // A router of its own (fresh: the router layer is memoized, and the one in hand is already built).
  const page = yield* Effect.cached(
    Layer.buildWithScope(
      HttpApiScalar.layer(EngineApi, { path: "/docs", scalar: { withDefaultFonts: false } }).pipe(Layer.provideMerge(Layer.fresh(HttpRouter.layer))),
      scope
    ).pipe(Effect.map((context) => Context.get(context, HttpRouter.HttpRouter).asHttpEffect()))
  )
  yield* router.add("GET", "/docs", Effect.flatten(page))
}))

/**
 * The whole HTTP surface, as routes of the router in context: the API, /health, /files,
 * /metrics, /v1/openapi.json, the reference page at /docs, the operator dashboard at /dashboard,
 * the error envelope and the request log. Needs the engine services (Jobs, Admin, Catalog,
 * Auth), BlobStore and HttpConfig, and the router (HttpRouter.serve or HttpRouter.toWebHandler
 * give it, with the platform's services: HttpServer.layerServices).
 */
export const EngineHttpLive = Layer.mergeAll(
  // Global middlewares wrap in the order they are added, the first outermost: the request log is
  // added first, so it wraps the envelope's middleware and logs the status the client gets.
  ErrorEnvelopeMiddleware.pipe(Layer.provide(RequestLogMiddleware)),
  SystemRoutes,
  DashboardRoutes,
  MetricsRoute,
  HttpApiBuilder.layer(EngineApi, { openapiPath: "/v1/openapi.json" }).pipe(
    Layer.provide([JobsHandlers, AccountHandlers, CatalogHandlers, ModelsHandlers, UploadsHandlers, WebhooksHandlers, AdminHandlers, ChangesHandlers]),
    Layer.provide([ApiKeyAuthLive, OptionalApiKeyAuthLive, AdminAuthLive])
  ),
  DocsRoute
)

/** What the platform gives every router (HttpServer.layerServices, or a server's own). */
type PlatformServices = HttpRouter.HttpRouter | Etag.Generator | FileSystem.FileSystem | HttpPlatform.HttpPlatform | Path.Path

/** The engine services EngineHttpLive needs, beside the router and the platform's services. */
export type EngineHttpRequirements = Exclude<HttpRouter.Request.Without<Layer.Services<typeof EngineHttpLive>>, PlatformServices>
