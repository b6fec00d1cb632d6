import { FetchHttpClient } from "@effect/platform"
import { Duration, Effect, Layer } from "effect"
import { ENGINE_VERSION } from "../version.js"

export interface OtlpTracingOptions {
  /** The OTLP/HTTP traces URL, such as `http://collector:4318/v1/traces`. */
  readonly url: string
  /** Sent with every export (an API key of a tracing vendor, for example). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** `service.name` of the spans. Default "genjobs". */
  readonly serviceName?: string | undefined
  /** Default `http/protobuf`, the OTLP default; `http/json` for receivers that read JSON. */
  readonly protocol?: "http/protobuf" | "http/json" | undefined
  /** How often spans are sent. Default 5 s. What is left is sent when the scope closes. */
  readonly exportIntervalMs?: number | undefined
}

/**
 * Spans exported over OTLP/HTTP through `@effect/opentelemetry` (no OpenTelemetry SDK). That
 * package is an optional peer dependency, loaded only when this layer is built.
 */
export const layerOtlpTracing = (options: OtlpTracingOptions): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.promise(() => Promise.all([import("@effect/opentelemetry/OtlpTracer"), import("@effect/opentelemetry/OtlpSerialization")])).pipe(
      Effect.map(([OtlpTracer, OtlpSerialization]) =>
        OtlpTracer.layer({
          url: options.url,
          resource: {
            serviceName: options.serviceName ?? "genjobs",
            serviceVersion: ENGINE_VERSION
          },
          headers: options.headers,
          exportInterval: Duration.millis(options.exportIntervalMs ?? 5_000)
        }).pipe(
          Layer.provide(options.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
          Layer.provide(FetchHttpClient.layer)
        )
      )
    )
  )
