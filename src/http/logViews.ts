import { Schema } from "effect"
import type { LogLine } from "../domain/providerLogs.js"
import type { LogPage } from "../services/Jobs.js"
import { JobLogLineOfLine } from "./schemas/jobLogs.js"

const encodeLine = Schema.encodeSync(JobLogLineOfLine)

/** A provider log line as the API answers it, as JSON: its time as ISO. */
export const jobLogLineView = (line: LogLine) => encodeLine(line)

/** A page of a job's provider log as GET /v1/jobs/{jobId}/logs answers it. */
export const jobLogPageView = (page: LogPage) => ({
  lines: page.lines.map(jobLogLineView),
  nextCursor: page.nextCursor,
  hasMore: page.hasMore
})
