import { Schema } from "effect"
import { JobError, JobStatus, OutputType } from "../../domain/job.js"
import { PageLimit, StatusFilter } from "./paging.js"
import { strictBody } from "./strictBody.js"

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Submit body. modelSlug/modelVersion are accepted as aliases of model/version (docs/decisions.md). */
export const SubmitBody = strictBody(Schema.Struct({
  model: Schema.optional(Schema.String),
  modelSlug: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  modelVersion: Schema.optional(Schema.String),
  input: JsonObject,
  webhookUrl: Schema.optional(Schema.String)
}))

export const EstimateBody = strictBody(Schema.Struct({
  model: Schema.optional(Schema.String),
  modelSlug: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  modelVersion: Schema.optional(Schema.String),
  input: Schema.optional(JsonObject)
}))

/** `Prefer: wait=N` (RFC 7240): hold the answer until the job is final or N seconds (at most 60) pass. */
const prefer = Schema.optional(Schema.String).annotations({
  description: "`wait=N`: answer once the job is completed, failed or cancelled, or after N seconds (at most 60)"
})

export const SubmitHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String),
  prefer
})

export const JobEventsHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String).annotations({
    description: "The id of the last event received: the stream resumes after it"
  })
})

export const SubmitResponse = Schema.Struct({
  jobId: Schema.String,
  requestId: Schema.String,
  status: Schema.Literal("pending"),
  estimatedCompletionTime: Schema.String,
  costMicroCents: Schema.Number
})

export const OutputItemView = Schema.Struct({
  url: Schema.String,
  type: OutputType,
  thumbnail: Schema.optional(Schema.String),
  posterImage: Schema.optional(Schema.String),
  contentType: Schema.optional(Schema.String),
  metadata: Schema.optional(JsonObject)
})

export const JobView = Schema.Struct({
  jobId: Schema.String,
  status: JobStatus,
  progress: Schema.Number,
  output: Schema.NullOr(Schema.String),
  outputs: Schema.NullOr(Schema.Array(OutputItemView)),
  error: Schema.NullOr(JobError),
  createdAt: Schema.String,
  completedAt: Schema.NullOr(Schema.String)
})

const { completedAt, createdAt, error, output, outputs, progress } = JobView.fields

/**
 * JobView's fields in the order GET /v1/jobs/{jobId} and the events stream have always sent them
 * (the answer's bytes are part of the contract, and encoding writes a struct's keys in its order).
 */
export const JobAnswer = Schema.Struct({ jobId: JobView.fields.jobId, status: JobView.fields.status, progress, createdAt, completedAt, output, outputs, error })

/**
 * Submit's answer under `Prefer: wait=N`: the submit fields, then the job's current fields
 * (its status, no longer only pending, in the submit's place).
 */
export const SubmitWaitedResponse = Schema.Struct({
  ...SubmitResponse.fields,
  status: JobView.fields.status,
  progress,
  createdAt,
  completedAt,
  output,
  outputs,
  error
})

export const JobListItem = Schema.Struct({
  jobId: Schema.String,
  status: JobStatus,
  progress: Schema.Number,
  model: Schema.String,
  createdAt: Schema.String,
  completedAt: Schema.NullOr(Schema.String)
})

export const JobListParams = Schema.Struct({
  limit: Schema.optional(PageLimit),
  cursor: Schema.optional(Schema.String),
  status: Schema.optional(StatusFilter(JobStatus.literals)),
  modelId: Schema.optional(Schema.String.annotations({ description: "A model slug" }))
})

export const JobList = Schema.Struct({
  jobs: Schema.Array(JobListItem),
  nextCursor: Schema.NullOr(Schema.String),
  hasMore: Schema.Boolean
})

export const CancelResponse = Schema.Struct({
  jobId: Schema.String,
  status: Schema.Literal("cancelled"),
  refundedMicroCents: Schema.Number
})

export const CostEstimateView = Schema.Struct({
  baseCostMicroCents: Schema.Number,
  estimatedCostMicroCents: Schema.Number,
  breakdown: Schema.Array(Schema.Struct({ component: Schema.String, costMicroCents: Schema.Number })),
  hasDiscount: Schema.Boolean,
  discounted: Schema.optional(
    Schema.Struct({ type: Schema.String, percentage: Schema.Number, savedMicroCents: Schema.Number })
  )
})

export const JobIdPath = Schema.Struct({ jobId: Schema.String })
