import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"

/**
 * A time as the API and webhooks write it (ISO 8601 in UTC, `2026-01-01T00:00:00.000Z`) from
 * the epoch milliseconds the domain keeps: the one codec every answer's times go through.
 */
export const IsoFromMillis = Schema.String.pipe(Schema.decodeTo(
  Schema.Number,
  SchemaTransformation.transformEffect({
    decode: (text: string, options) => {
      const ms = Date.parse(text)
      return Number.isNaN(ms)
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: "not an ISO 8601 time" }, text, options))
        : Effect.succeed(ms)
    },
    encode: (ms: number, options) => {
      const date = new Date(ms)
      return Number.isNaN(date.getTime())
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: "not a time in epoch milliseconds" }, ms, options))
        : Effect.succeed(date.toISOString())
    }
  })
))
