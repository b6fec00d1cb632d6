import { Duration, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
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

/** Spans exported over OTLP/HTTP through Effect's own exporter (effect/observability; no OpenTelemetry SDK). */
export const layerOtlpTracing = (options: OtlpTracingOptions): Layer.Layer<never> =>
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
