import { Cause, Context, type Fiber, Layer, Logger, type LogLevel, References, Result, Tracer } from "effect"

/** `json`: one JSON object per line, for log collectors. `text`: one readable line, for a terminal. */
export type LogFormat = "json" | "text"

export type LogLevelName = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "none"

/** One log event as the formatters see it. */
export interface LogRecord {
  readonly time: Date
  readonly level: LogLevel.LogLevel
  /** The logged values: the first string is the message; plain objects add fields. */
  readonly message: ReadonlyArray<unknown>
  /** Log annotations (Effect.annotateLogs), in order. */
  readonly annotations: ReadonlyArray<readonly [string, unknown]>
  readonly cause?: string | undefined
  readonly traceId?: string | undefined
  readonly spanId?: string | undefined
}

const LEVELS: Record<string, LogLevel.LogLevel> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None",
  off: "None"
}

/** LOG_LEVEL's values: trace, debug, info, warn (or warning), error, fatal, none (or off); any case. */
export const parseLogLevel = (value: string): Result.Result<LogLevel.LogLevel, string> => {
  const level = LEVELS[value.trim().toLowerCase()]
  return level === undefined
    ? Result.fail(`LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, none (got "${value}")`)
    : Result.succeed(level)
}

const levelName = (level: LogLevel.LogLevel): string => level.toLowerCase()

/**
 * An API key that reached a log line by mistake is cut to its prefix: keys are secrets, and
 * logs travel to places keys must not.
 */
const redactKeys = (line: string): string => line.replace(/gjk_[A-Za-z0-9_-]{8,}/g, "gjk_[redacted]")

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && Object.getPrototypeOf(u) === Object.prototype

/** The message, the fields (annotations, then the objects logged), and values that are neither. */
const partsOf = (record: LogRecord) => {
  const fields: Record<string, unknown> = {}
  for (const [key, value] of record.annotations) fields[key] = value
  let msg: string | undefined
  const details: Array<unknown> = []
  for (const part of record.message) {
    if (msg === undefined && typeof part === "string") msg = part
    else if (isPlainObject(part)) Object.assign(fields, part)
    else details.push(part instanceof Error ? part.message : part)
  }
  return { msg: msg ?? "", fields, details }
}

const jsonSafe = (_key: string, value: unknown) =>
  typeof value === "bigint" ? value.toString() : value instanceof Error ? value.message : value

/** Strings, finite or not numbers, booleans, null: what JSON.stringify writes alike with or without `jsonSafe`. */
const isPlainJson = (value: unknown) => {
  const type = typeof value
  return value === null || type === "string" || type === "number" || type === "boolean" || type === "undefined"
}

/** `{"time","level","msg",...fields,"details"?,"cause"?,"traceId"?,"spanId"?}` on one line. */
export const formatJson = (record: LogRecord): string => {
  const { details, fields, msg } = partsOf(record)
  const line: Record<string, unknown> = { time: record.time.toISOString(), level: levelName(record.level), msg, ...fields }
  if (details.length > 0) line["details"] = details
  if (record.cause !== undefined) line["cause"] = record.cause
  if (record.traceId !== undefined) line["traceId"] = record.traceId
  if (record.spanId !== undefined) line["spanId"] = record.spanId
  // Most lines (each request's, each job's) hold only plain values: a replacer costs JSON.stringify
  // about half as much again, so it is passed only for a line with something else in it.
  let plain = true
  for (const key in line) {
    if (!isPlainJson(line[key])) {
      plain = false
      break
    }
  }
  return redactKeys(plain ? JSON.stringify(line) : JSON.stringify(line, jsonSafe))
}

const COLORS: Record<string, string> = {
  trace: "\x1b[90m",
  debug: "\x1b[36m",
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
  fatal: "\x1b[35m"
}

const textValue = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value, jsonSafe) ?? String(value)
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text)
}

/** `12:00:01.234 INFO  message key=value ...`, the cause indented below; colours for a terminal. */
export const formatText = (record: LogRecord, color = false): string => {
  const { details, fields, msg } = partsOf(record)
  const level = levelName(record.level)
  const label = level.toUpperCase().padEnd(5)
  const pairs = Object.entries(fields).map(([k, v]) => `${k}=${textValue(v)}`)
  const head = [
    record.time.toISOString().slice(11, 23),
    color ? `${COLORS[level] ?? ""}${label}\x1b[0m` : label,
    msg,
    ...pairs,
    ...details.map(textValue)
  ].filter((s) => s !== "").join(" ")
  const cause = record.cause === undefined ? "" : `\n${record.cause.replace(/^/gm, "    ")}`
  return redactKeys(head + cause)
}

/** The trace of the span a line was logged in, when that span is exported somewhere. */
const traceOf = (fiber: Fiber.Fiber<unknown, unknown>) => {
  if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return {}
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span === undefined || span._tag !== "Span" || !/^[0-9a-f]{32}$/.test(span.traceId)) return {}
  return { traceId: span.traceId, spanId: span.spanId }
}

/** A Logger writing each line with `write` (console.log by default) in the given format. */
export const makeLogger = (format: LogFormat, options: { readonly color?: boolean; readonly write?: (line: string) => void } = {}) => {
  const write = options.write ?? ((line: string) => console.log(line))
  const color = options.color ?? false
  return Logger.make<unknown, void>(({ cause, date, fiber, logLevel, message }) => {
    const record: LogRecord = {
      time: date,
      level: logLevel,
      message: Array.isArray(message) ? message : [message],
      annotations: Object.entries(fiber.getRef(References.CurrentLogAnnotations)),
      cause: cause.reasons.length === 0 ? undefined : Cause.pretty(cause),
      ...traceOf(fiber)
    }
    write(format === "json" ? formatJson(record) : formatText(record, color))
  })
}

export interface LoggerOptions {
  /** Default: `text` when stdout is a terminal, `json` otherwise. */
  readonly format?: LogFormat | undefined
  /** The least severe level written. Default `info`. */
  readonly level?: LogLevelName | LogLevel.LogLevel | undefined
  /** Where lines go. Default `console.log` (stdout). */
  readonly write?: ((line: string) => void) | undefined
}

/** The names LOG_LEVEL takes, told apart from Effect's own level names (`Info`). */
const LEVEL_NAMES: ReadonlySet<string> = new Set(["trace", "debug", "info", "warn", "error", "fatal", "none"])

/** A level by name (or as given); `info` when unset. */
export const levelOf = (level: LoggerOptions["level"]): LogLevel.LogLevel =>
  level === undefined ? "Info" : LEVEL_NAMES.has(level) ? Result.getOrThrow(parseLogLevel(level)) : level as LogLevel.LogLevel

/**
 * Effect's tracer logger (each line an event of the current span), only while a tracer other
 * than the native one is installed: the native tracer's spans go nowhere, and each event cost a
 * formatting of the line and a copy of its annotations on every logged line (two a submit).
 */
const spanEventLogger = Logger.make<unknown, void>((options) => {
  if (options.fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer) Logger.tracerLogger.log(options)
})

/**
 * Replaces Effect's default logger with the engine's: JSON lines, or readable lines on a
 * terminal, from `level` up. The bundled server uses it with LOG_LEVEL; an embedding host may
 * use it too, or keep its own Effect Logger (every line the engine logs goes through it).
 */
export const layerLogger = (options: LoggerOptions = {}): Layer.Layer<never> => {
  const tty = typeof process !== "undefined" && process.stdout?.isTTY === true
  const format = options.format ?? (tty ? "text" : "json")
  const logger = makeLogger(format, { color: format === "text" && tty && options.write === undefined, ...(options.write ? { write: options.write } : {}) })
  return Layer.merge(
    // Every other logger goes (the default one, or the pretty one a runtime installs); the tracer's
    // stays, which records log lines as events of the current span.
    Logger.layer([spanEventLogger, logger]),
    Layer.succeed(References.MinimumLogLevel, levelOf(options.level))
  )
}
