import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Layer, Metric, Option, Redacted } from "effect"
import { InvalidApiKey, Unauthorized } from "../domain/accessRefusals.js"
import { NotFound } from "../domain/errors.js"
import { sameSecret } from "../http/authLayers.js"
import { StoreStats } from "../ports/StoreStats.js"
import { poolWaiting, queuePending } from "./metrics.js"
import { poolConnectionsOf } from "./metricSeries.js"
import { processMetricsText, startProcessMetrics } from "./processMetrics.js"
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "./prometheus.js"

export interface MetricsOptions {
  /**
   * The bearer token `/metrics` asks for (`Authorization: Bearer <token>`, Prometheus'
   * `authorization.credentials`). Without one the engine's handler answers 404 there; serve
   * `prometheusMetrics` yourself to expose them another way.
   */
  readonly token?: string | Redacted.Redacted<string> | undefined
}

export class MetricsConfig extends Context.Tag("genjobs/MetricsConfig")<MetricsConfig, {
  readonly token: Redacted.Redacted<string> | undefined
}>() {
  static readonly layer = (options: MetricsOptions = {}) =>
    Layer.succeed(MetricsConfig, {
      token: options.token === undefined || Redacted.isRedacted(options.token) ? options.token : Redacted.make(options.token)
    })
}

/** Gauges read at scrape time: a failed read shows NaN rather than a stale figure. */
const readGauges = Effect.gen(function*() {
  const stats = yield* Effect.serviceOption(StoreStats)
  if (Option.isNone(stats)) return
  const pending = yield* Effect.either(stats.value.pendingJobs)
  if (pending._tag === "Left") yield* Effect.logWarning("metrics: pending jobs could not be counted", pending.left.message)
  yield* Metric.set(queuePending, pending._tag === "Right" ? pending.right : Number.NaN)
  const pool = yield* stats.value.pool
  if (pool === undefined) return
  yield* Metric.set(poolConnectionsOf("total"), pool.total)
  yield* Metric.set(poolConnectionsOf("idle"), pool.idle)
  yield* Metric.set(poolWaiting, pool.waiting)
})

/**
 * Every Effect metric of this process in the Prometheus text format, the engine's gauges read
 * first from the store (StoreStats) when it is in context, then the process's own (CPU, memory,
 * event loop, GC: processMetrics.ts). What `/metrics` answers.
 */
export const prometheusMetrics: Effect.Effect<string> = Effect.zipRight(
  readGauges,
  Effect.zipWith(Effect.map(Metric.snapshot, renderPrometheus), Effect.promise(processMetricsText), (effectMetrics, processMetrics) => effectMetrics + processMetrics)
)

const refuse = (refusal: typeof NotFound | typeof Unauthorized | typeof InvalidApiKey, message: string) => Effect.fail(new refusal({ message }))

/** GET /metrics behind METRICS_TOKEN; off (404) without one. */
export const MetricsRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<never>()
    const stats = Context.getOption(services as Context.Context<StoreStats>, StoreStats)
    const token = Option.flatMapNullable(Context.getOption(services as Context.Context<MetricsConfig>, MetricsConfig), (c) => c.token)
    if (Option.isSome(token)) startProcessMetrics()
    const collect = Option.match(stats, {
      onNone: () => prometheusMetrics,
      onSome: (s) => Effect.provideService(prometheusMetrics, StoreStats, s)
    })
    yield* router.get(
      "/metrics",
      Effect.gen(function*() {
        if (Option.isNone(token)) return yield* refuse(NotFound, "The metrics endpoint is off: set METRICS_TOKEN to turn it on")
        const request = yield* HttpServerRequest.HttpServerRequest
        const match = /^Bearer\s+(\S+)$/i.exec(request.headers["authorization"] ?? "")
        if (match === null) return yield* refuse(Unauthorized, "Send Authorization: Bearer <METRICS_TOKEN>")
        if (!sameSecret(match[1]!, Redacted.value(token.value))) return yield* refuse(InvalidApiKey, "The metrics token is wrong")
        return HttpServerResponse.text(yield* collect, { contentType: PROMETHEUS_CONTENT_TYPE })
      })
    )
  })
)
