import { Schema } from "effect"
import { JobError } from "../../domain/job.js"
import { PageLimit } from "./paging.js"

const cursorText = "A cursor: a page's `nextCursor`, an entry's `cursor` or an event's id; the feed resumes after it"

export const ChangeListParams = Schema.Struct({
  after: Schema.optionalKey(Schema.String.annotate({ description: `${cursorText}. Absent: from the oldest entry kept` })),
  limit: Schema.optionalKey(PageLimit)
})

export const ChangeStreamParams = Schema.Struct({
  after: Schema.optionalKey(Schema.String.annotate({
    description: `${cursorText} (for clients that cannot send Last-Event-ID). Absent, and without Last-Event-ID: endings from now on`
  }))
})

export const ChangeStreamHeaders = Schema.Struct({
  "last-event-id": Schema.optionalKey(Schema.String.annotate({
    description: "The id of the last event received (an entry's cursor): the stream resumes after it; wins over `after`"
  }))
})

/** One job's ending in the feed, as the page and the stream's events answer it. */
export const ChangeView = Schema.Struct({
  cursor: Schema.String.annotate({ description: "This entry's place in the feed: `after` resumes after it" }),
  jobId: Schema.String,
  requestId: Schema.String,
  status: Schema.Literals(["completed", "failed", "cancelled"]),
  model: Schema.String,
  version: Schema.String,
  completedAt: Schema.String.annotate({ description: "When the job ended (ISO 8601)" }),
  costMicroCents: Schema.Int.annotate({ description: "What the submit charged" }),
  refundedMicroCents: Schema.Int.annotate({ description: "What the ending refunded: the whole cost when failed or cancelled, 0 when completed" }),
  error: Schema.optionalKey(JobError.annotate({ description: "Why it failed; absent unless failed" }))
})

export const ChangePageView = Schema.Struct({
  changes: Schema.Array(ChangeView),
  nextCursor: Schema.String.annotate({
    description: "Where the next page starts, always set: while `hasMore` is false, ask again later from it"
  }),
  hasMore: Schema.Boolean.annotate({ description: "More entries can be read at once" })
})
