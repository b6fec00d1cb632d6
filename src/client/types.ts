/**
 * The answers' types, taken from the HttpApi schemas with type-only imports: the Promise client
 * stays in step with the server and loads no schema code.
 */
import type { Schema } from "effect"
import type { AccountOverviewView } from "../http/schemas/account.js"
import type { ModelDetail, ModelList } from "../http/schemas/catalog.js"
import type {
  CancelResponse,
  CostEstimateView,
  JobList,
  JobListItem,
  JobView,
  SubmitResponse
} from "../http/schemas/jobs.js"
import type { PresignResponse } from "../http/schemas/uploads.js"

export type Job = Schema.Schema.Type<typeof JobView>
export type JobStatus = Job["status"]
export type JobPage = Schema.Schema.Type<typeof JobList>
export type JobSummary = Schema.Schema.Type<typeof JobListItem>
export type Submitted = Schema.Schema.Type<typeof SubmitResponse>
export type Cancelled = Schema.Schema.Type<typeof CancelResponse>
export type CostEstimate = Schema.Schema.Type<typeof CostEstimateView>
export type Models = Schema.Schema.Type<typeof ModelList>
export type Model = Schema.Schema.Type<typeof ModelDetail>
export type AccountOverview = Schema.Schema.Type<typeof AccountOverviewView>
export type Upload = Schema.Schema.Type<typeof PresignResponse>["data"]

/** A job's `input`: any JSON object the model's input schema accepts. */
export type JobInput = Readonly<Record<string, unknown>>

export const TERMINAL_STATUSES: ReadonlyArray<JobStatus> = ["completed", "failed", "cancelled"]
