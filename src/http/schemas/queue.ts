import { Schema } from "effect"
import { IsoFromMillis } from "../../domain/isoTime.js"

/** A range of times: the median estimate and the 90th percentile, ISO 8601. */
const TimeRangeOfRange = Schema.Struct({
  p50: IsoFromMillis.annotate({ description: "The median estimate" }),
  p90: IsoFromMillis.annotate({ description: "The 90th percentile: later than this one time in ten" })
})

/**
 * A pending job's place in the queue (src/domain/queuePosition.ts), times in the domain's epoch
 * milliseconds; its encoded side is the JSON of GET /v1/jobs/{id}'s `queue` and of the status
 * stream's `queue` events.
 */
export const QueuePlaceOfPlace = Schema.Struct({
  position: Schema.Number.annotate({ description: "1 for the next job to start among those waiting for the same capacity" }),
  ahead: Schema.Number.annotate({
    description: "Jobs that start before this one, of every account, in the fair order (an upper bound when an account's jobs were not queued back to back)"
  }),
  estimatedStartAt: TimeRangeOfRange.annotate({ description: "When the job should start" }),
  estimatedCompletionAt: TimeRangeOfRange.annotate({ description: "When the job should end" })
}).annotate({
  description: "The job's place among the jobs waiting for the same capacity (a provider limit, or the worker pool), " +
    "and estimates from the model's observed run times and the capacity ahead. Only on pending jobs."
})

export const QueuePlaceView = Schema.toEncoded(QueuePlaceOfPlace)

/** GET /admin/queue: the waiting jobs per account and version, with their places. */
export const QueueBoardView = Schema.Struct({
  at: Schema.String.annotate({ description: "When the queue was read (at most one poll interval before the answer)" }),
  waitingGroups: Schema.Int.annotate({ description: "Accounts' versions with jobs waiting, all of them (the groups listed are the first 200)" }),
  groups: Schema.Array(Schema.Struct({
    accountId: Schema.String,
    model: Schema.String,
    version: Schema.String,
    waiting: Schema.Int.annotate({ description: "The account's jobs of this version waiting" }),
    first: QueuePlaceView.annotate({ description: "The place of its first waiting job" }),
    last: QueuePlaceView.annotate({ description: "The place of its last waiting job" })
  })).annotate({ description: "By the first job's position, the next to start first" })
})
