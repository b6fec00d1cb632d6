import type { Job } from "./types.js"

/** Codes the client gives failures that never reached an answer; the others are the API's own. */
export type ClientErrorCode = "NETWORK_ERROR" | "TIMEOUT"

/**
 * A refused request, from the API's error envelope (`code`, `message`, `details`, `requestId`)
 * and the answer's `status`; or NETWORK_ERROR / TIMEOUT with status 0 when no answer came
 * (after the retries). An answer without the envelope (a proxy's page) is `HTTP_<status>`.
 * `_tag` tells it apart where `instanceof` cannot (two copies of the package, an Effect
 * `catchTag` after `Effect.tryPromise`).
 */
export class GenjobsError extends Error {
  readonly _tag = "GenjobsError" as const
  override readonly name = "GenjobsError"
  readonly code: string
  readonly status: number
  readonly details: Readonly<Record<string, unknown>>
  readonly requestId: string | undefined

  constructor(fields: {
    readonly code: string
    readonly status: number
    readonly message: string
    readonly details?: Readonly<Record<string, unknown>> | undefined
    readonly requestId?: string | undefined
    readonly cause?: unknown
  }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause })
    this.code = fields.code
    this.status = fields.status
    this.details = fields.details ?? {}
    this.requestId = fields.requestId
  }
}

/**
 * `run` and `subscribe` reject with this when the job ends failed or cancelled: the job ran (or
 * was refunded), unlike a GenjobsError where the request itself was refused. `code` is the job's
 * error code (GENERATION_FAILED, INTERNAL_ERROR) or JOB_CANCELLED.
 */
export class JobFailedError extends Error {
  readonly _tag = "JobFailedError" as const
  override readonly name = "JobFailedError"
  readonly code: string
  readonly job: Job

  constructor(job: Job) {
    const code = job.error?.code ?? "JOB_CANCELLED"
    super(job.error?.message ?? `job ${job.jobId} was ${job.status}`)
    this.code = code
    this.job = job
  }
}
