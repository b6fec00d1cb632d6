import { Schema } from "effect"

/** GET /admin/stats */
export const AdminStatsParams = Schema.Struct({
  from: Schema.optionalKey(Schema.String.annotate({ description: "ISO 8601; run times of jobs completed from here (default: 24 hours before `to`)" })),
  to: Schema.optionalKey(Schema.String.annotate({ description: "ISO 8601, exclusive (default: now); at most 366 days after `from`" }))
})

const RunTimesView = Schema.Struct({
  model: Schema.String,
  jobs: Schema.Int.annotate({ description: "Completed jobs the percentiles are taken over" }),
  p50Ms: Schema.Int.annotate({ description: "Median run time, from start to end (nearest rank)" }),
  p95Ms: Schema.Int
})

/** The queue now and the run times of the jobs completed in the range. */
export const StatsView = Schema.Struct({
  at: Schema.String.annotate({ description: "When the counts were read" }),
  pendingJobs: Schema.Int.annotate({ description: "Jobs waiting for a worker: the queue's depth" }),
  processingJobs: Schema.Int.annotate({ description: "Jobs a worker runs now: in flight" }),
  from: Schema.String,
  to: Schema.String,
  runTimes: Schema.Array(RunTimesView).annotate({
    description: "Per model, over the newest completed jobs of the range (at most 10,000 in all)"
  })
})
