import { Context, Effect, Layer, Metric, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
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

export class MetricsConfig extends Context.Service<MetricsConfig, {
  readonly token: Redacted.Redacted<string> | undefined
}>()("genjobs/MetricsConfig") {
  static readonly layer = (options: MetricsOptions = {}) =>
    Layer.succeed(MetricsConfig, {
      token: options.token === undefined || Redacted.isRedacted(options.token) ? options.token : Redacted.make(options.token)
    })
}

/** Gauges read at scrape time: a failed read shows NaN rather than a stale figure. */
const readGauges = Effect.gen(function*() {
  const stats = yield* Effect.serviceOption(StoreStats)
  if (Option.isNone(stats)) return
  const pending = yield* Effect.result(stats.value.pendingJobs)
  if (pending._tag === "Failure") yield* Effect.logWarning("metrics: pending jobs could not be counted", pending.failure.message)
  yield* Metric.update(queuePending, pending._tag === "Success" ? pending.success : Number.NaN)
  const pool = yield* stats.value.pool
  if (pool === undefined) return
  yield* Metric.update(poolConnectionsOf("total"), pool.total)
  yield* Metric.update(poolConnectionsOf("idle"), pool.idle)
  yield* Metric.update(poolWaiting, pool.waiting)
})

/**
 * Every Effect metric of this process in the Prometheus text format, the engine's gauges read
 * first from the store (StoreStats) when it is in context, then the process's own (CPU, memory,
 * event loop, GC: processMetrics.ts). What `/metrics` answers.
 */
export const prometheusMetrics: Effect.Effect<string> = Effect.andThen(
  readGauges,
  Effect.zipWith(Effect.map(Metric.snapshot, renderPrometheus), Effect.promise(processMetricsText), (effectMetrics, processMetrics) => effectMetrics + processMetrics)
)

const refuse = (refusal: typeof NotFound | typeof Unauthorized | typeof InvalidApiKey, message: string) => Effect.fail(new refusal({ message }))

/** GET /metrics behind METRICS_TOKEN; off (404) without one. */
export const MetricsRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<never>()
    const stats = Context.getOption(services as Context.Context<StoreStats>, StoreStats)
    const token = Option.flatMapNullishOr(Context.getOption(services as Context.Context<MetricsConfig>, MetricsConfig), (c) => c.token)
    if (Option.isSome(token)) startProcessMetrics()
    const collect = Option.match(stats, {
      onNone: () => prometheusMetrics,
      onSome: (s) => Effect.provideService(prometheusMetrics, StoreStats, s)
    })
    yield* router.add(
      "GET",
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
