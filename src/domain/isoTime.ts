import { ParseResult, Schema } from "effect"

/**
 * A time as the API and webhooks write it (ISO 8601 in UTC, `2026-01-01T00:00:00.000Z`) from
 * the epoch milliseconds the domain keeps: the one codec every answer's times go through.
 */
export const IsoFromMillis = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (text, _, ast) => {
    const ms = Date.parse(text)
    return Number.isNaN(ms) ? ParseResult.fail(new ParseResult.Type(ast, text, "not an ISO 8601 time")) : ParseResult.succeed(ms)
  },
  encode: (ms, _, ast) => {
    const date = new Date(ms)
    return Number.isNaN(date.getTime())
      ? ParseResult.fail(new ParseResult.Type(ast, ms, "not a time in epoch milliseconds"))
      : ParseResult.succeed(date.toISOString())
  }
})
