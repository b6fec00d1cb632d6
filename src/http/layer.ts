import { HttpApiBuilder, HttpApiScalar } from "@effect/platform"
import { Layer } from "effect"
import { EngineApi } from "./Api.js"
import { AdminAuthLive, ApiKeyAuthLive, OptionalApiKeyAuthLive } from "./authLayers.js"
import { ErrorEnvelopeMiddleware } from "./errorMiddleware.js"
import { AccountHandlers } from "./handlers/account.js"
import { AdminHandlers } from "./handlers/admin.js"
import { CatalogHandlers, ModelsHandlers } from "./handlers/catalog.js"
import { JobsHandlers } from "./handlers/jobs.js"
import { UploadsHandlers } from "./handlers/uploads.js"
import { WebhooksHandlers } from "./handlers/webhooks.js"
import { SystemRoutes } from "./systemRoutes.js"
import { DashboardRoutes } from "../dashboard/routes.js"
import { MetricsRoute } from "../observability/metricsRoute.js"
import { RequestLogMiddleware } from "../observability/requestLog.js"

/**
 * The whole HTTP surface: the API, /health, /files, /metrics, /v1/openapi.json, the reference page
 * at /docs, the operator dashboard at /dashboard, the error envelope and the request log.
 * Needs the engine services (Jobs, Admin, Catalog, Auth), BlobStore and HttpConfig.
 */
export const EngineHttpLive = Layer.mergeAll(
  // Built after the envelope's middleware, so it wraps it and logs the status the client gets.
  RequestLogMiddleware.pipe(Layer.provide(ErrorEnvelopeMiddleware)),
  SystemRoutes,
  DashboardRoutes,
  MetricsRoute,
  HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" }),
  // The page inlines Scalar's bundle and the document; without its default web fonts it loads
  // nothing from another host, so it works offline and behind strict egress rules.
  HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })
).pipe(
  Layer.provideMerge(
    HttpApiBuilder.api(EngineApi).pipe(
      Layer.provide([JobsHandlers, AccountHandlers, CatalogHandlers, ModelsHandlers, UploadsHandlers, WebhooksHandlers, AdminHandlers]),
      Layer.provide([ApiKeyAuthLive, OptionalApiKeyAuthLive, AdminAuthLive])
    )
  )
)

export type EngineHttpRequirements = Layer.Layer.Context<typeof EngineHttpLive>
