/**
 * The HTTP framework the engine is built on, with nothing of the engine: an Effect HttpApi of one
 * endpoint, GET /health answering `{"status":"ok"}`, served by NodeHttpServer with the per-request
 * span and the access log off, as the bundled server runs without a trace exporter.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { createServer } from "node:http"

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("system").add(HttpApiEndpoint.get("health", "/health", { success: Schema.Struct({ status: Schema.String }) }))
)

const System = HttpApiBuilder.group(Api, "system", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" })))

const server = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(System)), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(server))
