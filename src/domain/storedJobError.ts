import { Effect, Schema } from "effect"
import { UNCLASSIFIED } from "./failureTaxonomy.js"
import { JobError } from "./job.js"

/**
 * A job's error as a store holds it: rows written before the failure taxonomy (issue 38) have no
 * `type` or `retryable`, and read as UNCLASSIFIED (`internal`, not retryable). Written whole.
 */
export const StoredJobError = Schema.Struct({
  ...JobError.fields,
  type: JobError.fields.type.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(UNCLASSIFIED.type))),
  retryable: JobError.fields.retryable.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(UNCLASSIFIED.retryable)))
})
