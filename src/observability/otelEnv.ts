import { Either } from "effect"
import type { OtlpTracingOptions } from "./otlp.js"

/** The OTEL_* variables this engine reads, by their standard names. */
export interface OtelVariables {
  readonly OTEL_SDK_DISABLED?: string | undefined
  readonly OTEL_TRACES_EXPORTER?: string | undefined
  readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined
  readonly OTEL_EXPORTER_OTLP_HEADERS?: string | undefined
  readonly OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string | undefined
  readonly OTEL_EXPORTER_OTLP_PROTOCOL?: string | undefined
  readonly OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string | undefined
  readonly OTEL_SERVICE_NAME?: string | undefined
  readonly OTEL_BSP_SCHEDULE_DELAY?: string | undefined
}

/** `key1=value1,key2=value2`, values percent-encoded, as the OTLP exporter spec writes headers. */
export const parseOtlpHeaders = (text: string): Either.Either<Record<string, string>, string> => {
  const headers: Record<string, string> = {}
  for (const part of text.split(",")) {
    if (part.trim() === "") continue
    const eq = part.indexOf("=")
    if (eq <= 0) return Either.left("OTEL_EXPORTER_OTLP_HEADERS must read key=value,key=value")
    try {
      headers[decodeURIComponent(part.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return Either.left("OTEL_EXPORTER_OTLP_HEADERS holds an invalid percent-encoding")
    }
  }
  return Either.right(headers)
}

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== ""

/**
 * Tracing options from the standard OTEL_* variables; undefined when tracing is off (no
 * endpoint, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none). The signal-specific
 * variables win over the general ones; the general endpoint gets `/v1/traces` appended, the
 * traces endpoint is used as it is. Only OTLP over HTTP is spoken: `grpc` is refused.
 */
export const otlpTracingFromVariables = (env: OtelVariables): Either.Either<OtlpTracingOptions | undefined, string> => {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return Either.right(undefined)
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (exporter === "none") return Either.right(undefined)
  if (set(exporter) && exporter !== "otlp") return Either.left(`OTEL_TRACES_EXPORTER=${exporter} is not supported: use otlp or none`)
  const url = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    ? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.trim()
    : set(env.OTEL_EXPORTER_OTLP_ENDPOINT)
    ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.trim().replace(/\/+$/, "")}/v1/traces`
    : undefined
  if (url === undefined) return Either.right(undefined)
  if (!/^https?:\/\//.test(url)) return Either.left("OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL")
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf").trim()
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return Either.left(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`)
  }
  const headerText = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? ""
  const headers = parseOtlpHeaders(headerText)
  if (Either.isLeft(headers)) return Either.left(headers.left)
  const delay = set(env.OTEL_BSP_SCHEDULE_DELAY) ? Number(env.OTEL_BSP_SCHEDULE_DELAY) : 5_000
  if (!Number.isFinite(delay) || delay <= 0) return Either.left("OTEL_BSP_SCHEDULE_DELAY must be a positive number of milliseconds")
  return Either.right({
    url,
    headers: headers.right,
    protocol,
    serviceName: set(env.OTEL_SERVICE_NAME) ? env.OTEL_SERVICE_NAME.trim() : "genjobs",
    exportIntervalMs: delay
  })
}
