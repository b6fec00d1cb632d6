/**
 * The answers' types, written out as plain interfaces so that `genjobs/client` and its
 * declarations need no package: an app without effect (or on another major) typechecks against
 * them. test/client/types.test.ts checks each equals the server's HttpApi schema's type.
 */

export type JobStatus = "pending" | "processing" | "completed" | "failed" | "cancelled"

export interface JobOutput {
  readonly url: string
  readonly type: "video" | "image" | "audio" | "text"
  readonly thumbnail?: string
  readonly posterImage?: string
  readonly contentType?: string
  readonly metadata?: { readonly [key: string]: unknown }
}

/** GET /v1/jobs/{jobId}; times are ISO 8601. */
export interface Job {
  readonly jobId: string
  readonly status: JobStatus
  /** 0 to 100. */
  readonly progress: number
  /** The provider's own progress report (0-100), never moving backwards; null when it reports none. */
  readonly providerProgress: number | null
  readonly createdAt: string
  readonly completedAt: string | null
  /** The first output's URL. */
  readonly output: string | null
  readonly outputs: ReadonlyArray<JobOutput> | null
  readonly error: JobFailure | null
  /** A pending job's place in the queue (null when the server could not read it); absent on other statuses. */
  readonly queue?: QueuePlace | null
}

/** Why a job failed (docs/api.md, "Failure types"): what a client can do next depends on `type` and `retryable`. */
export type FailureType =
  | "provider_unavailable"
  | "provider_timeout"
  | "input_rejected"
  | "content_blocked"
  | "output_invalid"
  | "rate_limited"
  | "internal"

/** A failed job's error: the spec's code and message, its failure type, and whether the same submit would likely succeed later. */
export interface JobFailure {
  readonly code: "GENERATION_FAILED" | "INTERNAL_ERROR" | "PROVIDER_UNAVAILABLE"
  readonly message: string
  readonly type: FailureType
  readonly retryable: boolean
}

/** A median estimate and its 90th percentile, ISO 8601. */
export interface TimeRange {
  readonly p50: string
  readonly p90: string
}

/** A pending job's place among the jobs waiting for the same capacity, and when it should start and end. */
export interface QueuePlace {
  /** 1 for the next job to start. */
  readonly position: number
  /** Jobs that start before it. */
  readonly ahead: number
  readonly estimatedStartAt: TimeRange
  readonly estimatedCompletionAt: TimeRange
}

export interface JobSummary {
  readonly jobId: string
  readonly status: JobStatus
  readonly progress: number
  readonly providerProgress: number | null
  /** The model's slug. */
  readonly model: string
  readonly createdAt: string
  readonly completedAt: string | null
  /** A failed job's error, as GET /v1/jobs/{jobId} shows it; null otherwise. */
  readonly error: JobFailure | null
}

export interface JobPage {
  readonly jobs: ReadonlyArray<JobSummary>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

/** One line of a job's provider log (GET /v1/jobs/{jobId}/logs), redacted of secrets. */
export interface JobLogLine {
  /** Its place in the job's log: 1, 2, ... */
  readonly seq: number
  /** When the engine read it, ISO 8601. */
  readonly at: string
  readonly line: string
}

export interface JobLogPage {
  readonly lines: ReadonlyArray<JobLogLine>
  /** Where the next page starts; present while the job may still log, null once it ended and no line follows. */
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

export interface Submitted {
  readonly jobId: string
  readonly requestId: string
  readonly status: "pending"
  readonly estimatedCompletionTime: string
  readonly costMicroCents: number
}

export interface Cancelled {
  readonly jobId: string
  readonly status: "cancelled"
  readonly refundedMicroCents: number
}

export interface CostEstimate {
  readonly baseCostMicroCents: number
  readonly estimatedCostMicroCents: number
  readonly breakdown: ReadonlyArray<{ readonly component: string; readonly costMicroCents: number }>
  readonly hasDiscount: boolean
  readonly discounted?: { readonly type: string; readonly percentage: number; readonly savedMicroCents: number }
}

type JsonObject = { readonly [key: string]: unknown }

export interface ModelSummary {
  /** The slug, provider/model/capability. */
  readonly id: string
  readonly providerId: string
  readonly providerName: string
  readonly name: string
  readonly description: string
  readonly category: string
  readonly currentVersion: string
  readonly versionCount: number
  readonly currentVersionPricing: JsonObject | null
  /** ISO 8601; absent when the current version has no sunset. */
  readonly currentVersionSunsetAt?: string
}

export interface Models {
  readonly models: ReadonlyArray<ModelSummary>
}

export interface ModelVersion {
  readonly versionId: string
  readonly status: string
  readonly inputSchema: JsonObject
  readonly outputSchema: JsonObject
  readonly pricing: JsonObject
  readonly rateLimits: { readonly requestsPerMinute: number; readonly requestsPerDay: number }
  /** ISO 8601; absent when the version has no sunset. */
  readonly sunsetAt?: string
}

export interface Model {
  readonly id: string
  readonly providerId: string
  readonly providerName: string
  readonly name: string
  readonly description: string
  readonly category: string
  readonly currentVersion: string
  readonly versions: ReadonlyArray<ModelVersion>
}

export interface BudgetStatus {
  readonly limitMicroCents: number
  readonly period: "day" | "month" | "total"
  readonly spentMicroCents: number
  /** When the period ends (UTC); null for `total`. */
  readonly resetsAt: string | null
}

export interface AccountOverview {
  readonly account: {
    readonly id: string
    readonly name: string
    readonly balanceMicroCents: number
    readonly maxConcurrentJobs: number
    /** Pending and processing jobs: what counts against maxConcurrentJobs. */
    readonly jobsInFlight: number
    readonly budget: BudgetStatus | null
  }
  readonly key: {
    readonly id: string
    readonly name: string
    /** Empty means every scope. */
    readonly scopes: ReadonlyArray<"submit_job" | "check_status" | "list_models">
    readonly allowedIPs: ReadonlyArray<string>
    readonly expiresAt: string | null
    readonly budget: BudgetStatus | null
  }
}

export interface Upload {
  readonly uploadUrl: string
  readonly fileUrl: string
  readonly fileId: string
  readonly expiresAt: string
  readonly maxSize: number
}

/** A job's `input`: any JSON object the model's input schema accepts. */
export type JobInput = Readonly<Record<string, unknown>>

export const TERMINAL_STATUSES: ReadonlyArray<JobStatus> = ["completed", "failed", "cancelled"]

/** An entry of the changes feed (GET /v1/changes, the changes stream): one job's ending. */
export interface Change {
  /** This entry's place in the feed: store it, and resume after it (`after`). */
  readonly cursor: string
  readonly jobId: string
  readonly requestId: string
  readonly status: "completed" | "failed" | "cancelled"
  readonly model: string
  readonly version: string
  /** When the job ended (ISO 8601). */
  readonly completedAt: string
  /** What the submit charged. */
  readonly costMicroCents: number
  /** What the ending refunded: the whole cost when failed or cancelled, 0 when completed. */
  readonly refundedMicroCents: number
  /** Why it failed; absent unless failed. */
  readonly error?: JobFailure
}

/** A page of the changes feed. */
export interface ChangePage {
  readonly changes: ReadonlyArray<Change>
  /** Where the next page starts, always set: while `hasMore` is false, ask again later from it. */
  readonly nextCursor: string
  readonly hasMore: boolean
}
