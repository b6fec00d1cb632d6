/**
 * The HTTP framework the engine is built on, with nothing of the engine behind a submit: an
 * @effect/platform HttpApi of one endpoint, POST /v1/jobs/submit with a Schema-decoded payload
 * and an encoded answer, as the engine's, served by NodeHttpServer with the per-request span off.
 * What it costs per request is the framework's floor under the engine's submit.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpMiddleware } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"

let submitted = 0

const Submit = Schema.Struct({
  model: Schema.String,
  version: Schema.optional(Schema.String),
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  webhookUrl: Schema.optional(Schema.String)
})
const Submitted = Schema.Struct({ jobId: Schema.String, status: Schema.String, model: Schema.String })

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("jobs").add(HttpApiEndpoint.post("submit", "/v1/jobs/submit").setPayload(Submit).addSuccess(Submitted))
)

const Jobs = HttpApiBuilder.group(Api, "jobs", (handlers) =>
  handlers.handle("submit", ({ payload }) => Effect.succeed({ jobId: `job_${++submitted}`, status: "pending", model: payload.model })))

const server = HttpMiddleware.withTracerDisabledWhen(
  HttpApiBuilder.serve().pipe(Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(Jobs)))),
  () => true
).pipe(Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })))

NodeRuntime.runMain(Layer.launch(server))
