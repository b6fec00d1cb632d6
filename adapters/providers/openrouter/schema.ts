import { Schema } from "effect"

/** Where a video generation job stands: the last four are terminal. */
export const VideoStatus = Schema.Literals(["pending", "in_progress", "completed", "failed", "cancelled", "expired"])

/**
 * A video generation job as `POST /api/v1/videos` and `GET /api/v1/videos/{jobId}` answer it;
 * only the fields read. `unsigned_urls` are the content endpoint's URLs (`GET
 * /api/v1/videos/{jobId}/content?index=N`, with the API key).
 */
export const VideoJob = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1)),
  status: VideoStatus,
  error: Schema.optional(Schema.NullOr(Schema.String)),
  generation_id: Schema.optional(Schema.NullOr(Schema.String)),
  unsigned_urls: Schema.optional(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isPattern(/^https?:\/\//)))))
})
export type VideoJob = typeof VideoJob.Type

/** OpenRouter's error body: `{ error: { code, message, metadata? } }`; a moderation refusal's metadata has `reasons` and `flagged_input`. */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.optional(Schema.Number),
    message: Schema.String,
    metadata: Schema.optional(Schema.NullOr(Schema.Struct({
      reasons: Schema.optional(Schema.Unknown),
      flagged_input: Schema.optional(Schema.Unknown)
    })))
  })
})

/** A webhook's event: `video.generation.{completed,failed,cancelled,expired}` about the job `data.id`. */
export const WebhookEvent = Schema.Struct({
  type: Schema.String,
  data: Schema.Struct({ id: Schema.String.check(Schema.isMinLength(1)) })
})
