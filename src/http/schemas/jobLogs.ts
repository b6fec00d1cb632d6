import { Schema } from "effect"
import { IsoFromMillis } from "../../domain/isoTime.js"
import { MAX_LOG_LINE_LENGTH } from "../../domain/providerLogs.js"
import { PageLimit } from "./paging.js"

/** What a job shows of its provider's own progress: null until the provider reported any. */
export const ProviderProgress = Schema.NullOr(Schema.Int).annotate({
  description: "The provider's own progress report (0-100), never moving backwards; null when the provider reports none. " +
    "`progress` keeps its meaning (0, 50 or 100 by status)."
})

export const JobLogParams = Schema.Struct({
  limit: Schema.optionalKey(PageLimit),
  cursor: Schema.optionalKey(Schema.String.annotate({ description: "`nextCursor` of the previous page: the lines after it" }))
})

export const JobLogLineOfLine = Schema.Struct({
  seq: Schema.Int.annotate({ description: "The line's place in the job's log: 1, 2, ..." }),
  at: IsoFromMillis.annotate({ description: "When the engine read the line from the provider" }),
  line: Schema.String.annotate({
    description: `The line as the provider logged it, redacted of secrets, at most ${MAX_LOG_LINE_LENGTH} characters`
  })
})
export const JobLogLine = Schema.Struct({
  seq: JobLogLineOfLine.fields.seq,
  at: Schema.toEncoded(JobLogLineOfLine.fields.at),
  line: JobLogLineOfLine.fields.line
})

export const JobLogPage = Schema.Struct({
  lines: Schema.Array(JobLogLine),
  nextCursor: Schema.NullOr(Schema.String).annotate({
    description: "Where the next page starts; present while the job may still log (ask again with it to follow a running job), " +
      "null once the job ended and no line follows"
  }),
  hasMore: Schema.Boolean
})
