import { APICallError } from "@ai-sdk/provider"
import { GenjobsError } from "../client.js"
import type { Job } from "../client.js"

/** What the engine said, on every error the bridge throws (`APICallError.data`). */
export interface GenjobsErrorData {
  /** The engine's error code: INSUFFICIENT_CREDITS, GENERATION_FAILED, JOB_CANCELLED, NETWORK_ERROR, ... */
  readonly code: string
  readonly jobId?: string | undefined
  readonly requestId?: string | undefined
  readonly details?: Readonly<Record<string, unknown>> | undefined
}

/**
 * A refused request as the AI SDK's APICallError. Retryable (so the AI SDK asks again with the
 * same Idempotency-Key) when no answer came or the engine answered 408, 429 or 5xx; a 409 is an
 * answer here (IDEMPOTENCY_KEY_REUSED), unlike the AI SDK's default, and not asked again.
 */
export const apiCallError = (error: unknown, url: string, requestBodyValues: unknown): unknown => {
  if (!(error instanceof GenjobsError)) return error
  const status = error.status === 0 ? undefined : error.status
  return new APICallError({
    message: `${error.code}: ${error.message}`,
    url,
    requestBodyValues,
    ...(status === undefined ? {} : { statusCode: status }),
    responseBody: JSON.stringify({ error: { code: error.code, message: error.message, details: error.details }, requestId: error.requestId }),
    isRetryable: status === undefined || status === 408 || status === 429 || status >= 500,
    cause: error,
    data: { code: error.code, requestId: error.requestId, details: error.details } satisfies GenjobsErrorData
  })
}

/** A job that ended failed or cancelled: an APICallError that is not retried (the engine refunded or settled it). */
export const jobFailedError = (job: Job, url: string, requestBodyValues: unknown): APICallError => {
  const code = job.error?.code ?? "JOB_CANCELLED"
  return new APICallError({
    message: `${code}: ${job.error?.message ?? `job ${job.jobId} was ${job.status}`}`,
    url,
    requestBodyValues,
    isRetryable: false,
    data: { code, jobId: job.jobId } satisfies GenjobsErrorData
  })
}
