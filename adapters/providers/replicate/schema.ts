import { Schema } from "effect"

/** A prediction as Replicate's HTTP API answers it (create, get, cancel, list, webhooks); only the fields read. */
export const Prediction = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1)),
  status: Schema.Literals(["starting", "processing", "succeeded", "failed", "canceled", "aborted"]),
  output: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.NullOr(Schema.Unknown)),
  logs: Schema.optional(Schema.NullOr(Schema.String)),
  created_at: Schema.optional(Schema.NullOr(Schema.String)),
  webhook: Schema.optional(Schema.NullOr(Schema.String))
})
export type Prediction = typeof Prediction.Type

/** GET /v1/predictions: newest first, 100 a page, `next` the following page's URL. */
export const PredictionPage = Schema.Struct({
  next: Schema.optional(Schema.NullOr(Schema.String)),
  results: Schema.Array(Prediction)
})

/** GET /v1/webhooks/default/secret. */
export const WebhookSecret = Schema.Struct({ key: Schema.String.check(Schema.isStartingWith("whsec_")) })

/** Error answers are problem details: `detail` says what happened, `title` names the kind. */
export const Problem = Schema.Struct({
  title: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.Unknown)
})

/** The prediction a webhook's body is about. */
export const WebhookBody = Schema.Struct({ id: Schema.String.check(Schema.isMinLength(1)) })
