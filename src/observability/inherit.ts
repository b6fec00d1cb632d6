import { Effect, Layer, References, Tracer } from "effect"
import { HttpMiddleware } from "effect/http"

/**
 * The calling fiber's loggers, log level and tracer, as a layer: a runtime built apart (the web
 * handler's) then logs and traces as the engine's own runtime does. Without a tracer that
 * exports, the platform's per-request server span is not made at all.
 */
export const currentObservability: Effect.Effect<Layer.Layer<never>> = Effect.withFiber((fiber) => {
  const loggers = fiber.getRef(References.CurrentLoggers)
  const level = fiber.getRef(References.MinimumLogLevel)
  const tracer = fiber.getRef(Tracer.Tracer)
  return Effect.succeed(Layer.mergeAll(
    Layer.succeed(References.CurrentLoggers, loggers),
    Layer.succeed(References.MinimumLogLevel, level),
    tracer === Tracer.nativeTracer ? Layer.succeed(HttpMiddleware.TracerDisabledWhen, () => true) : Layer.succeed(Tracer.Tracer, tracer)
  ))
})
