import { HttpMiddleware } from "@effect/platform"
import { Context, DefaultServices, Effect, FiberRef, Layer, Tracer } from "effect"

const nativeTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/**
 * The calling fiber's loggers, log level and tracer, as a layer: a runtime built apart (the web
 * handler's) then logs and traces as the engine's own runtime does. Without a tracer that
 * exports, the platform's per-request server span is not made at all.
 */
export const currentObservability: Effect.Effect<Layer.Layer<never>> = Effect.gen(function*() {
  const loggers = yield* FiberRef.get(FiberRef.currentLoggers)
  const level = yield* FiberRef.get(FiberRef.currentMinimumLogLevel)
  const tracer = yield* Effect.tracer
  return Layer.mergeAll(
    Layer.locallyScoped(FiberRef.currentLoggers, loggers),
    Layer.locallyScoped(FiberRef.currentMinimumLogLevel, level),
    tracer === nativeTracer ? Layer.locallyScoped(HttpMiddleware.currentTracerDisabledWhen, () => true) : Layer.setTracer(tracer)
  )
})
