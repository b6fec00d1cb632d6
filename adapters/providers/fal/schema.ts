import { Schema } from "effect"

/** POST {queue}/{model}: the request is queued; the URLs lead to its status, result and cancellation. */
export const Queued = Schema.Struct({
  request_id: Schema.String.check(Schema.isMinLength(1)),
  status_url: Schema.optional(Schema.String),
  response_url: Schema.optional(Schema.String),
  cancel_url: Schema.optional(Schema.String)
})

/** GET .../requests/{id}/status. A completed request that failed may say why in `error`, and of which kind in `error_type`. */
export const QueueStatus = Schema.Struct({
  status: Schema.Literals(["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELED", "CANCELLED"]),
  queue_position: Schema.optional(Schema.NullOr(Schema.Number)),
  error: Schema.optional(Schema.NullOr(Schema.String)),
  error_type: Schema.optional(Schema.NullOr(Schema.String)),
  /** With `?logs=1`: every log line of the request so far, oldest first. */
  logs: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({ message: Schema.String }))))
})

/** GET .../requests/{id}: the model's own JSON object. */
export const QueueResult = Schema.Record(Schema.String, Schema.Unknown)

/** A file in a result: `images: [File]`, `image: File`, `video: File`, `audio_file: File`, ... */
export const FalFile = Schema.Struct({
  url: Schema.String.check(Schema.isMinLength(1)),
  content_type: Schema.optional(Schema.NullOr(Schema.String)),
  width: Schema.optional(Schema.NullOr(Schema.Number)),
  height: Schema.optional(Schema.NullOr(Schema.Number))
})

/**
 * Error answers: model errors carry `detail` as a list of {loc, msg, type}; request errors
 * (timeouts, runner failures) carry `detail` as a string with `error_type`.
 */
export const FalError = Schema.Struct({
  detail: Schema.optional(Schema.Unknown),
  error_type: Schema.optional(Schema.String)
})
