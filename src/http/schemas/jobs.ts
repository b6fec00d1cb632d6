import { Schema } from "effect"
import { IsoFromMillis } from "../../domain/isoTime.js"
import { Job, JobStatus, OutputItem } from "../../domain/job.js"
import { ProviderProgress } from "./jobLogs.js"
import { PageLimit, StatusFilter } from "./paging.js"
import { QueuePlaceOfPlace } from "./queue.js"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** Submit body. modelSlug/modelVersion are accepted as aliases of model/version (docs/decisions.md). */
export const SubmitBody = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  modelSlug: Schema.optionalKey(Schema.String),
  version: Schema.optionalKey(Schema.String),
  modelVersion: Schema.optionalKey(Schema.String),
  input: JsonObject,
  webhookUrl: Schema.optionalKey(Schema.String)
})

export const EstimateBody = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  modelSlug: Schema.optionalKey(Schema.String),
  version: Schema.optionalKey(Schema.String),
  modelVersion: Schema.optionalKey(Schema.String),
  input: Schema.optionalKey(JsonObject)
})

/** `Prefer: wait=N` (RFC 7240): hold the answer until the job is final or N seconds (at most 60) pass. */
const prefer = Schema.optionalKey(Schema.String.annotate({
  description: "`wait=N`: answer once the job is completed, failed or cancelled, or after N seconds (at most 60)"
}))

export const SubmitHeaders = Schema.Struct({
  "idempotency-key": Schema.optionalKey(Schema.String),
  prefer
})

export const JobEventsHeaders = Schema.Struct({
  "last-event-id": Schema.optionalKey(Schema.String.annotate({
    description: "The id of the last event received: the stream resumes after it"
  }))
})

/** A time in the API's answers: ISO 8601, encoded from the domain's epoch milliseconds. */
const Time = IsoFromMillis
const Progress = Schema.Number

/*
 * Each answer about a job is defined once, from the job's own fields, in the domain's types
 * (times in milliseconds): `...OfJob`. Encoding one gives the JSON; the answer's schema is its
 * encoded side, so a handler may return either the view or its JSON. Fields are in the order
 * the JSON has them.
 */

/** A struct's encoded side as a struct: each field's JSON, its `fields` at hand for other answers. */
const jsonStruct = <Fields extends Schema.Struct.Fields>(struct: Schema.Struct<Fields>) =>
  Schema.Struct(
    Object.fromEntries(Object.entries(struct.fields).map(([key, field]) => [key, Schema.toEncoded(field)])) as {
      readonly [K in keyof Fields]: Schema.toEncoded<Fields[K]>
    }
  )

export const SubmitResponseOfJob = Schema.Struct({
  jobId: Job.fields.id,
  requestId: Job.fields.requestId,
  status: Schema.Literal("pending"),
  estimatedCompletionTime: Time,
  costMicroCents: Job.fields.costMicroCents
})
export const SubmitResponse = jsonStruct(SubmitResponseOfJob)

export const OutputItemView = OutputItem

export const JobViewOfJob = Schema.Struct({
  jobId: Job.fields.id,
  status: Job.fields.status,
  progress: Progress,
  providerProgress: ProviderProgress,
  createdAt: Time,
  completedAt: Schema.NullOr(Time),
  /** The first output's URL. */
  output: Schema.NullOr(OutputItem.fields.url),
  outputs: Job.fields.outputs,
  error: Job.fields.error,
  /** Beside the spec's fields: a pending job's place (null when it could not be read), absent on other statuses. */
  queue: Schema.optionalKey(Schema.NullOr(QueuePlaceOfPlace))
})
export const JobView = jsonStruct(JobViewOfJob)

export const JobListItemOfJob = Schema.Struct({
  jobId: Job.fields.id,
  status: Job.fields.status,
  progress: Progress,
  providerProgress: ProviderProgress,
  model: Job.fields.model,
  createdAt: Time,
  completedAt: Schema.NullOr(Time),
  /** A failed job's error (its failure type among it); null otherwise. */
  error: Job.fields.error
})
export const JobListItem = jsonStruct(JobListItemOfJob)

/**
 * Submit's answer under `Prefer: wait=N`: the submit fields, then the job's current fields
 * (its status, no longer only pending, in the submit's place).
 */
export const SubmitWaitedResponse = Schema.Struct({
  ...SubmitResponse.fields,
  ...JobView.fields
})

export const JobListParams = Schema.Struct({
  limit: Schema.optionalKey(PageLimit),
  cursor: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(StatusFilter(JobStatus.literals)),
  modelId: Schema.optionalKey(Schema.String.annotate({ description: "A model slug" }))
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
  discounted: Schema.optionalKey(
    Schema.Struct({ type: Schema.String, percentage: Schema.Number, savedMicroCents: Schema.Number })
  )
})

export const JobIdPath = Schema.Struct({ jobId: Schema.String })
