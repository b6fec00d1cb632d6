import { Schema } from "effect"
import { DeliveryStatus } from "../../domain/webhook.js"
import { PageLimit, StatusFilter } from "./paging.js"

export const DeliveryAttemptView = Schema.Struct({
  attempt: Schema.Number,
  at: Schema.String,
  statusCode: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Number,
  responseBody: Schema.NullOr(Schema.String)
})

export const DeliveryView = Schema.Struct({
  id: Schema.String,
  jobId: Schema.String,
  url: Schema.String,
  status: Schema.Literals(["pending", "sent", "failed"]),
  attempts: Schema.Array(DeliveryAttemptView),
  nextAttemptAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})

export const DeliveryListParams = Schema.Struct({
  limit: Schema.optionalKey(PageLimit),
  cursor: Schema.optionalKey(Schema.String),
  jobId: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(StatusFilter(DeliveryStatus.literals))
})

export const DeliveryList = Schema.Struct({
  deliveries: Schema.Array(DeliveryView),
  nextCursor: Schema.NullOr(Schema.String),
  hasMore: Schema.Boolean
})

export const DeliveryIdPath = Schema.Struct({ id: Schema.String })
