/**
 * genjobs/observability: the engine's logger (JSON lines or readable lines), its Prometheus
 * metrics, and OpenTelemetry traces over OTLP/HTTP, with their settings from the environment.
 * Tracing needs the optional peer dependency `@effect/opentelemetry`, loaded only when used.
 */
import { Config, Effect, Layer, Option, Result } from "effect"
import { layerLogger, type LogFormat, type LogLevelName, parseLogLevel } from "../src/observability/logger.js"
import { otlpTracingFromVariables, type OtelVariables } from "../src/observability/otelEnv.js"
import { layerOtlpTracing, type OtlpTracingOptions } from "../src/observability/otlp.js"
import { invalidSetting } from "./settingChecks.js"

export {
  formatJson,
  formatText,
  layerLogger,
  type LogFormat,
  type LoggerOptions,
  type LogLevelName,
  type LogRecord,
  makeLogger,
  parseLogLevel
} from "../src/observability/logger.js"
export { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../src/observability/prometheus.js"
export { MetricsConfig, type MetricsOptions, prometheusMetrics } from "../src/observability/metricsRoute.js"
export * as EngineMetrics from "../src/observability/metrics.js"
export { layerOtlpTracing, type OtlpTracingOptions } from "../src/observability/otlp.js"
export { otlpTracingFromVariables, type OtelVariables, parseOtlpHeaders } from "../src/observability/otelEnv.js"
export { observeJobRepo } from "../src/observability/observedJobRepo.js"
export { traceProvider, layerTracedProviders } from "../src/observability/tracedProviders.js"
export { type PoolUse, StoreStats } from "../src/ports/StoreStats.js"

const OTEL_NAMES: ReadonlyArray<keyof OtelVariables> = [
  "OTEL_SDK_DISABLED",
  "OTEL_TRACES_EXPORTER",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
  "OTEL_SERVICE_NAME",
  "OTEL_BSP_SCHEDULE_DELAY"
]

const otelVariables: Config.Config<OtelVariables> = Config.all(
  Object.fromEntries(OTEL_NAMES.map((name) => [name, Config.String(name).pipe(Config.option, Config.map(Option.getOrUndefined))]))
) as Config.Config<OtelVariables>

/** LOG_LEVEL, LOG_FORMAT and the OTEL_* variables (see docs/observability.md). */
export const ObservabilityEnv: Config.Config<{
  readonly logLevel: LogLevelName
  readonly logFormat: LogFormat | undefined
  readonly tracing: OtlpTracingOptions | undefined
}> = Config.all({
  logLevel: Config.String("LOG_LEVEL").pipe(
    Config.withDefault("info"),
    Config.mapEffect((value) =>
      Result.match(parseLogLevel(value), {
        onFailure: (message) => Effect.fail(invalidSetting(message)),
        onSuccess: () => Effect.succeed(value.trim().toLowerCase().replace(/^warning$/, "warn").replace(/^off$/, "none") as LogLevelName)
      })
    )
  ),
  logFormat: Config.Literals(["json", "text"], "LOG_FORMAT").pipe(Config.option, Config.map(Option.getOrUndefined)),
  tracing: otelVariables.pipe(Config.mapEffect((env) =>
    Result.match(otlpTracingFromVariables(env), {
      onFailure: (message) => Effect.fail(invalidSetting(message)),
      onSuccess: Effect.succeed
    })
  ))
})

export type ObservabilitySettings = Config.Success<typeof ObservabilityEnv>

/** The logger, and the OTLP tracer when an endpoint is set, as the settings say. */
export const layerObservability = (settings: ObservabilitySettings): Layer.Layer<never> =>
  Layer.merge(
    layerLogger({ level: settings.logLevel, format: settings.logFormat }),
    settings.tracing === undefined ? Layer.empty : layerOtlpTracing(settings.tracing)
  )

/** `layerObservability` with its settings read from the environment, as the bundled server does. */
export const layerObservabilityFromEnv: Layer.Layer<never, Config.ConfigError> = Layer.unwrap(
  Effect.map(ObservabilityEnv, layerObservability)
)
