import { Result, Schema } from "effect"
import { TransitionError } from "./errors.js"
import { FailureType } from "./failureTaxonomy.js"
import { AccountId, ApiKeyId, JobId, RequestId } from "./ids.js"
import { ProviderHandle, ProviderPhase, ProviderRouteRef } from "./providerHandle.js"
import { ProviderLogMark } from "./providerLogs.js"
import { Refusal } from "./refusal.js"

export const JobStatus = Schema.Literals(["pending", "processing", "completed", "failed", "cancelled"])
export type JobStatus = typeof JobStatus.Type

export const OutputType = Schema.Literals(["video", "image", "audio", "text"])
export type OutputType = typeof OutputType.Type

export const OutputItem = Schema.Struct({
  url: Schema.String,
  type: OutputType,
  thumbnail: Schema.optional(Schema.String),
  posterImage: Schema.optional(Schema.String),
  contentType: Schema.optional(Schema.String),
  metadata: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
})
export type OutputItem = typeof OutputItem.Type

export const JobFailureCode = Schema.Literals(["GENERATION_FAILED", "INTERNAL_ERROR", "PROVIDER_UNAVAILABLE"])
export const JobError = Schema.Struct({
  code: JobFailureCode,
  message: Schema.String,
  /** Issue 38: why the job failed, decided by classifyFailure (domain/failureTaxonomy.ts). */
  type: FailureType,
  retryable: Schema.Boolean.annotate({ description: "Whether the same submit would likely succeed later" })
})
export type JobError = typeof JobError.Type

/** A job as the engine stores it. Times are epoch milliseconds; money is micro-cents. */
export const Job = Schema.Struct({
  id: JobId,
  accountId: AccountId,
  /** The key that submitted the job; null (or absent) for jobs of releases that did not record it. */
  apiKeyId: Schema.optional(Schema.NullOr(ApiKeyId)),
  requestId: RequestId,
  model: Schema.String,
  version: Schema.String,
  input: Schema.Record(Schema.String, Schema.Unknown),
  webhookUrl: Schema.NullOr(Schema.String),
  status: JobStatus,
  costMicroCents: Schema.Int,
  error: Schema.NullOr(JobError),
  outputs: Schema.NullOr(Schema.Array(OutputItem)),
  createdAt: Schema.Int,
  estimatedCompletionAt: Schema.Int,
  startedAt: Schema.NullOr(Schema.Int),
  completedAt: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  leaseOwner: Schema.NullOr(Schema.String),
  leaseExpiresAt: Schema.NullOr(Schema.Int),
  /** The provider start's phase and handle (see ProviderState); null before any start. */
  providerPhase: Schema.NullOr(ProviderPhase),
  providerHandle: Schema.NullOr(ProviderHandle),
  /** Starts asked of the provider, the refused ones included. */
  providerStarts: Schema.Int,
  /**
   * The route (and credential id, never its secret) the job's start was sent on, synchronous
   * starts included; null before any start was sent, and on jobs of releases that did not record it.
   */
  providerRoute: Schema.NullOr(ProviderRouteRef),
  /**
   * The job's place in claim order among pending jobs (src/domain/fairShare.ts), set by the
   * store at submit: what a job is built with before that is replaced.
   */
  fairKey: Schema.Int,
  /** What the provider reported of its progress (0-100), never moving backwards; absent until it reported any. */
  providerProgress: Schema.optional(Schema.Int),
  /** Where the job's provider log stands (domain/providerLogs.ts); absent until a poll brought a line. */
  providerLog: Schema.optional(ProviderLogMark)
})
export type Job = typeof Job.Type

/**
 * What can happen to a job. `Reclaim` is a worker taking over a processing job whose lease ran
 * out; `Abandon` fails a job that can no longer run (lease attempts used up, version disabled).
 */
export type JobEvent = "Pickup" | "Reclaim" | "Complete" | "Fail" | "Abandon" | "Cancel"
export const jobEvents: ReadonlyArray<JobEvent> = ["Pickup", "Reclaim", "Complete", "Fail", "Abandon", "Cancel"]

const transitions: Record<JobStatus, Partial<Record<JobEvent, JobStatus>>> = {
  pending: { Pickup: "processing", Cancel: "cancelled", Abandon: "failed" },
  processing: { Reclaim: "processing", Complete: "completed", Fail: "failed", Abandon: "failed" },
  completed: {},
  failed: {},
  cancelled: {}
}

/** The job state machine: the only place that says which status follows which. */
export const transition = (from: JobStatus, event: JobEvent): Result.Result<JobStatus, TransitionError> => {
  const to = transitions[from][event]
  return to === undefined ? Result.fail(new TransitionError({ from, event })) : Result.succeed(to)
}

export const isTerminal = (status: JobStatus): boolean =>
  status === "completed" || status === "failed" || status === "cancelled"

/** The jobs that count against an account's maximum of concurrent jobs. */
export const activeStatuses: ReadonlyArray<JobStatus> = ["pending", "processing"]

/** A claim of many jobs at once: one lease for all of them. */
export interface ClaimLease {
  readonly now: number
  readonly leaseOwner: string
  readonly leaseExpiresAt: number
}

/**
 * What a claim makes of a runnable job: the state machine's Pickup (pending) or Reclaim (an
 * expired lease), one more attempt, the claimer's lease. A Pickup also records the provider
 * start as begun (phase `starting`, one start): the claimer calls the provider straight after,
 * so the mark that keeps a provider from being paid twice costs no write of its own. A Reclaim
 * keeps the provider state the lost run left. Stores that claim in one statement write exactly
 * this; the conformance suite holds them to it.
 */
export const claimedJob = (job: Job, lease: ClaimLease): Job => ({
  ...job,
  status: Result.getOrThrow(transition(job.status, job.status === "pending" ? "Pickup" : "Reclaim")),
  attempts: job.attempts + 1,
  // The claim's time is read before its statement runs, which can see a job submitted meanwhile:
  // a job never starts before it was created.
  startedAt: job.startedAt ?? Math.max(job.createdAt, lease.now),
  leaseOwner: lease.leaseOwner,
  leaseExpiresAt: lease.leaseExpiresAt,
  ...(job.status === "pending" ? { providerPhase: "starting", providerStarts: job.providerStarts + 1 } : {})
})

/**
 * The job was just taken by its first pickup, whose claim recorded the provider start as begun
 * (claimedJob): pending jobs have no attempts, so only that claim leaves exactly one, and a run
 * that finds it may start the provider without writing the mark again.
 */
export const startMarkedByClaim = (job: Job): boolean =>
  job.attempts === 1 && job.providerPhase === "starting" && job.providerHandle === null

/** Refunds follow the statuses that give the credits back. */
export const refundsOnEntry = (status: JobStatus): boolean => status === "failed" || status === "cancelled"

/** Progress shown to clients: failed and cancelled jobs show 0, as the spec says of failed. */
export const progressOf = (status: JobStatus): number =>
  status === "processing" ? 50 : status === "completed" ? 100 : 0

/** No job with this id (for this caller: another account's job is UnauthorizedAccess). */
export class JobNotFound extends Refusal<JobNotFound>()("JobNotFound", { code: "JOB_NOT_FOUND", status: 404 }) {}

/** The job is past pending: only pending jobs can be cancelled. */
export class JobCannotBeCancelled extends Refusal<JobCannotBeCancelled>()("JobCannotBeCancelled", {
  code: "JOB_CANNOT_BE_CANCELLED",
  status: 409
}) {}
