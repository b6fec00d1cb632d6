/**
 * The HTTP framework the engine is built on, with nothing of the engine: an @effect/platform
 * HttpApi of one endpoint, GET /health answering `{"status":"ok"}`, served by NodeHttpServer
 * with the per-request span off, as the bundled server runs without a trace exporter.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpMiddleware } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("system").add(HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Struct({ status: Schema.String })))
)

const System = HttpApiBuilder.group(Api, "system", (handlers) => handlers.handle("health", () => Effect.succeed({ status: "ok" })))

const server = HttpMiddleware.withTracerDisabledWhen(
  HttpApiBuilder.serve().pipe(Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(System)))),
  () => true
).pipe(Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })))

NodeRuntime.runMain(Layer.launch(server))
