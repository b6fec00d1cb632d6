import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { formatJson, formatText, type LogRecord, parseLogLevel } from "../../src/observability/logger.js"
import { otlpTracingFromVariables, parseOtlpHeaders } from "../../src/observability/otelEnv.js"

const record = (overrides: Partial<LogRecord> = {}): LogRecord => ({
  time: new Date("2026-01-02T03:04:05.678Z"),
  level: "Info",
  message: ["http request", { method: "GET", status: 200 }],
  annotations: [["service", "api"]],
  ...overrides
})

describe("log lines", () => {
  it("JSON: time, level and msg first, then annotations and the logged object's fields", () => {
    expect(formatJson(record())).toBe(
      "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\",\"msg\":\"http request\",\"service\":\"api\",\"method\":\"GET\",\"status\":200}"
    )
    const line = JSON.parse(formatJson(record({ level: "Warn", message: ["x", 42, new Error("boom")], cause: "Error: boom\n  at y" })))
    expect(line).toMatchObject({ level: "warn", msg: "x", details: [42, "boom"], cause: "Error: boom\n  at y" })
    expect(JSON.parse(formatJson(record({ traceId: "a".repeat(32), spanId: "b".repeat(16) })))).toMatchObject({ traceId: "a".repeat(32) })
  })

  it("JSON: a field's bigint as its digits and an Error as its message, at any depth", () => {
    const line = JSON.parse(formatJson(record({ message: ["x", { total: 5n, error: new Error("boom"), nested: { at: 7n } }] })))
    expect(line).toMatchObject({ total: "5", error: "boom", nested: { at: "7" } })
  })

  it("text: a readable line, values quoted only when needed, the cause indented below", () => {
    expect(formatText(record({ message: ["job failed", { jobId: "job_1", error: "no such model" }], annotations: [] }))).toBe(
      "03:04:05.678 INFO  job failed jobId=job_1 error=\"no such model\""
    )
    expect(formatText(record({ message: ["x"], annotations: [], cause: "Error: a\nat b" }))).toBe("03:04:05.678 INFO  x\n    Error: a\n    at b")
    expect(formatText(record({ message: ["x"], annotations: [] }), true)).toContain("\x1b[32mINFO ")
  })

  it("cuts an API key that reached a line to its prefix, in both formats", () => {
    const leaked = record({ message: ["oops", { header: "Bearer gjk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdefg" }] })
    for (const line of [formatJson(leaked), formatText(leaked)]) {
      expect(line).toContain("gjk_[redacted]")
      expect(line).not.toContain("AbCdEfGh")
    }
  })

  it("reads LOG_LEVEL in any case and refuses unknown levels", () => {
    expect(Result.getOrThrow(parseLogLevel("DEBUG"))).toBe("Debug")
    expect(Result.getOrThrow(parseLogLevel("warning"))).toBe("Warn")
    expect(Result.getOrThrow(parseLogLevel("off"))).toBe("None")
    expect(Result.isFailure(parseLogLevel("verbose"))).toBe(true)
  })
})

describe("OTEL_* variables", () => {
  it("is off without an endpoint, or when disabled", () => {
    expect(otlpTracingFromVariables({})).toEqual(Result.succeed(undefined))
    expect(otlpTracingFromVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toEqual(Result.succeed(undefined))
    expect(otlpTracingFromVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toEqual(Result.succeed(undefined))
  })

  it("appends /v1/traces to the general endpoint, takes the traces endpoint as it is, and reads headers and names", () => {
    expect(Result.getOrThrow(otlpTracingFromVariables({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20abc, x-team = ops",
      OTEL_SERVICE_NAME: "jobs-api",
      OTEL_BSP_SCHEDULE_DELAY: "1000"
    }))).toEqual({
      url: "http://collector:4318/v1/traces",
      headers: { authorization: "Bearer abc", "x-team": "ops" },
      protocol: "http/protobuf",
      serviceName: "jobs-api",
      exportIntervalMs: 1000
    })
    const specific = Result.getOrThrow(otlpTracingFromVariables({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://vendor.example/otlp/traces",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"
    }))
    expect(specific).toMatchObject({ url: "https://vendor.example/otlp/traces", protocol: "http/json", serviceName: "genjobs" })
  })

  it("refuses what it cannot speak", () => {
    expect(Result.isFailure(otlpTracingFromVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }))).toBe(true)
    expect(Result.isFailure(otlpTracingFromVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }))).toBe(true)
    expect(Result.isFailure(otlpTracingFromVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_EXPORTER: "zipkin" }))).toBe(true)
    expect(Result.isFailure(parseOtlpHeaders("novalue"))).toBe(true)
  })
})
