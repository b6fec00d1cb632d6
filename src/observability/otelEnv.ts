import { Result } from "effect"
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
export const parseOtlpHeaders = (text: string): Result.Result<Record<string, string>, string> => {
  const headers: Record<string, string> = {}
  for (const part of text.split(",")) {
    if (part.trim() === "") continue
    const eq = part.indexOf("=")
    if (eq <= 0) return Result.fail("OTEL_EXPORTER_OTLP_HEADERS must read key=value,key=value")
    try {
      headers[decodeURIComponent(part.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return Result.fail("OTEL_EXPORTER_OTLP_HEADERS holds an invalid percent-encoding")
    }
  }
  return Result.succeed(headers)
}

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== ""

/**
 * Tracing options from the standard OTEL_* variables; undefined when tracing is off (no
 * endpoint, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none). The signal-specific
 * variables win over the general ones; the general endpoint gets `/v1/traces` appended, the
 * traces endpoint is used as it is. Only OTLP over HTTP is spoken: `grpc` is refused.
 */
export const otlpTracingFromVariables = (env: OtelVariables): Result.Result<OtlpTracingOptions | undefined, string> => {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return Result.succeed(undefined)
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (exporter === "none") return Result.succeed(undefined)
  if (set(exporter) && exporter !== "otlp") return Result.fail(`OTEL_TRACES_EXPORTER=${exporter} is not supported: use otlp or none`)
  const url = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    ? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.trim()
    : set(env.OTEL_EXPORTER_OTLP_ENDPOINT)
    ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.trim().replace(/\/+$/, "")}/v1/traces`
    : undefined
  if (url === undefined) return Result.succeed(undefined)
  if (!/^https?:\/\//.test(url)) return Result.fail("OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL")
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf").trim()
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return Result.fail(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`)
  }
  const headerText = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? ""
  const headers = parseOtlpHeaders(headerText)
  if (Result.isFailure(headers)) return Result.fail(headers.failure)
  const delay = set(env.OTEL_BSP_SCHEDULE_DELAY) ? Number(env.OTEL_BSP_SCHEDULE_DELAY) : 5_000
  if (!Number.isFinite(delay) || delay <= 0) return Result.fail("OTEL_BSP_SCHEDULE_DELAY must be a positive number of milliseconds")
  return Result.succeed({
    url,
    headers: headers.success,
    protocol,
    serviceName: set(env.OTEL_SERVICE_NAME) ? env.OTEL_SERVICE_NAME.trim() : "genjobs",
    exportIntervalMs: delay
  })
}
