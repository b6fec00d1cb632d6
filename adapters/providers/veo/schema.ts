import { Schema } from "effect"

/**
 * A long-running operation's name as the Gemini API gives it (`models/{model}/operations/{id}`):
 * path segments of letters, digits, `_`, `.` and `-` that start with a letter or digit, so a
 * name put into a URL path can never climb out of `/v1beta/`.
 */
export const OPERATION_NAME = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)*$/

export const OperationName = Schema.String.check(Schema.isPattern(OPERATION_NAME, { message: "an operation name" }))

/** google.rpc.Status, as an operation's `error` and an error answer's `error` carry it. */
const Status = Schema.Struct({
  code: Schema.optional(Schema.Number),
  message: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String)
})

/** An error answer of the Gemini API: `{ error: { code, message, status } }`. */
export const ErrorBody = Schema.Struct({ error: Status })

const GeneratedSample = Schema.Struct({
  video: Schema.optional(Schema.Struct({
    uri: Schema.optional(Schema.String.check(Schema.isPattern(/^https?:\/\//))),
    mimeType: Schema.optional(Schema.String)
  }))
})

/**
 * A predictLongRunning operation, as the start and `GET /v1beta/{name}` answer it: `done` once it
 * ended, then either `error` or `response.generateVideoResponse` with the generated samples (or,
 * when the safety filters took them all, the filtered count and reasons).
 */
export const Operation = Schema.Struct({
  name: OperationName,
  done: Schema.optional(Schema.Boolean),
  error: Schema.optional(Status),
  response: Schema.optional(Schema.Struct({
    generateVideoResponse: Schema.optional(Schema.Struct({
      generatedSamples: Schema.optional(Schema.Array(GeneratedSample)),
      raiMediaFilteredCount: Schema.optional(Schema.Number),
      raiMediaFilteredReasons: Schema.optional(Schema.Array(Schema.String))
    }))
  }))
})
export type Operation = typeof Operation.Type

/**
 * google.rpc.Code's canonical names by number: an operation's `error` may carry only the number,
 * and the engine classifies a failure by the name (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ...).
 */
export const GRPC_CODE_NAMES: Readonly<Record<number, string>> = {
  1: "CANCELLED",
  2: "UNKNOWN",
  3: "INVALID_ARGUMENT",
  4: "DEADLINE_EXCEEDED",
  5: "NOT_FOUND",
  6: "ALREADY_EXISTS",
  7: "PERMISSION_DENIED",
  8: "RESOURCE_EXHAUSTED",
  9: "FAILED_PRECONDITION",
  10: "ABORTED",
  11: "OUT_OF_RANGE",
  12: "UNIMPLEMENTED",
  13: "INTERNAL",
  14: "UNAVAILABLE",
  15: "DATA_LOSS",
  16: "UNAUTHENTICATED"
}
