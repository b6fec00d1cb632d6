import { Option, Redacted } from "effect"
import { SqlError } from "effect/sql"
import type { ServerSettings } from "./config.js"

/** The driver's own reason, however it came: PostgreSQL's message, a socket's code, each error of an AggregateError. */
export const reasonOf = (cause: unknown): string => {
  if (cause instanceof AggregateError && cause.errors.length > 0) return [...new Set(cause.errors.map(reasonOf))].join("; ")
  if (!(cause instanceof Error)) return String(cause)
  const code = (cause as { code?: unknown }).code
  const message = cause.message !== "" ? cause.message : typeof code === "string" ? code : cause.name
  // PostgreSQL's SQLSTATE (28P01, 3D000) says what to search for; a socket's code is in its message already.
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !message.includes(code) ? `${message} (${code})` : message
}

/** DATABASE_URL without its password, to say which database a start could not open. */
export const databaseOf = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.password = ""
    return parsed.href
  } catch {
    return "DATABASE_URL"
  }
}

/**
 * A store that failed the start, on one line with the database's own reason: `PgClient: Failed
 * to connect` alone leaves an operator guessing between a wrong password, a missing database
 * and a server not running. Undefined for any other failure.
 */
export const storeFailureLine = (settings: ServerSettings, error: unknown): string | undefined => {
  if (!SqlError.isSqlError(error)) return undefined
  const where = Option.match(settings.engine.databaseUrl, {
    onNone: () => `the SQLite database in ${settings.engine.dataDir}`,
    onSome: (url) => databaseOf(Redacted.value(url))
  })
  // The driver's error is the cause of the SqlError's reason (ConnectionError, AuthenticationError...),
  // which only repeats the SqlError's message.
  const driverError = error.reason.cause
  const reason = driverError === undefined ? error.message : `${error.message}: ${reasonOf(driverError)}`
  return `genjobs: cannot open ${where}: ${reason}`
}
