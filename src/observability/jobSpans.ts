import { Context, Effect, Exit, Option, Tracer } from "effect"

/** Whether spans go anywhere: Effect's built-in tracer keeps them in memory and drops them. */
export const exporting: Effect.Effect<boolean> = Effect.withFiber((fiber) => Effect.succeed(fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer))

/** Job submit spans remembered in this process, oldest dropped first past this many. */
const REMEMBERED = 10_000

/**
 * Each job's submit span, so the job's later spans in this process (generation, completion,
 * webhook) join its trace. Another process, or this one after a restart, starts their own
 * traces; every span carries `genjobs.job_id` to find them by.
 */
const submitSpansKey = Symbol.for("genjobs/observability/submitSpans")
const submitSpans: Map<string, Tracer.ExternalSpan> = ((globalThis as Record<symbol, unknown>)[submitSpansKey] ??= new Map()) as Map<
  string,
  Tracer.ExternalSpan
>

export const rememberSubmitSpan = (jobId: string, span: Tracer.AnySpan) => {
  if (submitSpans.size >= REMEMBERED) submitSpans.delete(submitSpans.keys().next().value!)
  submitSpans.set(jobId, Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled }))
}

export const submitSpanOf = (jobId: string): Tracer.ExternalSpan | undefined => submitSpans.get(jobId)

/**
 * Runs `effect` in a span named `name` carrying the job's id, a child of the job's submit span
 * when this process knows it. Without a tracer that exports, no span is made at all (and a
 * job id given as a function is never computed).
 */
export const inJobSpan = (name: string, job: string | (() => string), attributes: Record<string, unknown> = {}) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(exporting, (on) => {
    if (!on) return effect
    const jobId = typeof job === "string" ? job : job()
    const parent = submitSpanOf(jobId)
    return Effect.withSpan(effect, name, {
      attributes: { "genjobs.job_id": jobId, ...attributes },
      ...(parent === undefined ? { root: true } : { parent })
    })
  })

/** A span of the current trace (a request's, a worker's), made only when spans are exported. */
export const inSpan = (name: string, attributes: Record<string, unknown> = {}) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(exporting, (on) => (on ? Effect.withSpan(effect, name, { attributes }) : effect))

/**
 * Records a span of the job's trace that already happened, from `startNanos` to `endNanos`
 * (the tracer's clock, as Clock.currentTimeNanos reads it): for work whose jobs are known only
 * once it is done, such as a claim. Nothing when no tracer exports.
 */
export const recordJobSpan = (
  name: string,
  jobId: string,
  startNanos: bigint,
  endNanos: bigint,
  attributes: Record<string, unknown> = {}
): Effect.Effect<void> =>
  Effect.flatMap(exporting, (on) =>
    on
      ? Effect.withFiber((fiber) => {
        const span = fiber.getRef(Tracer.Tracer).span({
          name,
          parent: Option.fromNullishOr(submitSpanOf(jobId)),
          annotations: Context.empty(),
          links: [],
          startTime: startNanos,
          kind: "internal",
          root: false,
          sampled: true
        })
        span.attribute("genjobs.job_id", jobId)
        for (const [key, value] of Object.entries(attributes)) span.attribute(key, value)
        span.end(endNanos, Exit.void)
        return Effect.void
      })
      : Effect.void)
