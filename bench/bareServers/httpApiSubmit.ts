/**
 * The HTTP framework the engine is built on, with nothing of the engine behind a submit: an
 * Effect HttpApi of one endpoint, POST /v1/jobs/submit with a Schema-decoded payload and an
 * encoded answer, as the engine's, served by NodeHttpServer with the per-request span and the
 * access log off. What it costs per request is the framework's floor under the engine's submit.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { createServer } from "node:http"

let submitted = 0

const Submit = Schema.Struct({
  model: Schema.String,
  version: Schema.optionalKey(Schema.String),
  input: Schema.Record(Schema.String, Schema.Unknown),
  webhookUrl: Schema.optionalKey(Schema.String)
})
const Submitted = Schema.Struct({ jobId: Schema.String, status: Schema.String, model: Schema.String })

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("jobs").add(HttpApiEndpoint.post("submit", "/v1/jobs/submit", { payload: Submit, success: Submitted }))
)

const Jobs = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  handlers.handle("submit", ({ payload }) => Effect.succeed({ jobId: `job_${++submitted}`, status: "pending", model: payload.model })))

const server = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(Jobs)), { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(server))
