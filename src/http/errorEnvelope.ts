import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"
import type { EngineError, ErrorCode } from "../domain/errors.js"

/** The spec's envelope for every error: {success:false, error:{code,message,details}, requestId}. */
export class ErrorEnvelope extends Schema.Class<ErrorEnvelope>("ErrorEnvelope")({
  success: Schema.Literal(false),
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  }),
  requestId: Schema.String
}) {}

const statusOf: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  INVALID_INPUT: 400,
  INVALID_CONTENT_TYPE: 400,
  UNAUTHORIZED: 401,
  INVALID_API_KEY: 401,
  API_KEY_INACTIVE: 401,
  API_KEY_EXPIRED: 401,
  INSUFFICIENT_BALANCE: 402,
  IP_NOT_WHITELISTED: 403,
  OPERATION_NOT_ALLOWED: 403,
  MODEL_ACCESS_DENIED: 403,
  UNAUTHORIZED_ACCESS: 403,
  MODEL_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  NOT_FOUND: 404,
  JOB_CANNOT_BE_CANCELLED: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  DELIVERY_NOT_RETRYABLE: 409,
  UPLOAD_URL_INVALID: 403,
  UPLOAD_URL_EXPIRED: 403,
  UPLOAD_ALREADY_RECEIVED: 409,
  FILE_TOO_LARGE: 413,
  PAYLOAD_TOO_LARGE: 413,
  LENGTH_REQUIRED: 411,
  CONCURRENT_JOBS_EXCEEDED: 429,
  RATE_LIMIT_EXCEEDED: 429,
  PUBSUB_PUBLISH_FAILED: 503,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500
}

export const httpStatusOf = (code: ErrorCode): number => statusOf[code]

const documented = (status: number, description: string) =>
  ErrorEnvelope.annotations(HttpApiSchema.annotations({ status, description }))

/** One entry per status, for the OpenAPI document; the codes each status carries are listed. */
export const documentedErrors = [
  documented(400, "VALIDATION_ERROR, INVALID_INPUT, INVALID_CONTENT_TYPE"),
  documented(401, "UNAUTHORIZED, INVALID_API_KEY, API_KEY_INACTIVE, API_KEY_EXPIRED"),
  documented(402, "INSUFFICIENT_BALANCE"),
  documented(403, "IP_NOT_WHITELISTED, OPERATION_NOT_ALLOWED, MODEL_ACCESS_DENIED, UNAUTHORIZED_ACCESS, UPLOAD_URL_INVALID, UPLOAD_URL_EXPIRED"),
  documented(404, "MODEL_NOT_FOUND, JOB_NOT_FOUND, NOT_FOUND"),
  documented(409, "JOB_CANNOT_BE_CANCELLED, IDEMPOTENCY_KEY_REUSED, DELIVERY_NOT_RETRYABLE, UPLOAD_ALREADY_RECEIVED"),
  documented(413, "FILE_TOO_LARGE, PAYLOAD_TOO_LARGE"),
  documented(429, "CONCURRENT_JOBS_EXCEEDED, RATE_LIMIT_EXCEEDED (with Retry-After)"),
  documented(500, "INTERNAL_ERROR"),
  documented(503, "PUBSUB_PUBLISH_FAILED (submit), SERVICE_UNAVAILABLE (with Retry-After)")
] as const

/**
 * What handlers fail with. It has the envelope's shape (so it satisfies the declared error
 * schemas) plus the status and headers; the error middleware renders it.
 */
export class ApiFailure extends ErrorEnvelope {
  readonly status!: number
  readonly retryAfterSeconds!: number | undefined
  static fromEngine(error: EngineError, requestId: string): ApiFailure {
    const failure = new ApiFailure({
      success: false,
      error: { code: error.code, message: error.message, details: error.details ?? {} },
      requestId
    })
    return Object.assign(failure, { status: httpStatusOf(error.code), retryAfterSeconds: error.retryAfterSeconds })
  }
}

export const renderFailure = (failure: ApiFailure): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    { success: false, error: failure.error, requestId: failure.requestId },
    {
      status: failure.status,
      headers: {
        "x-request-id": failure.requestId,
        ...(failure.retryAfterSeconds === undefined ? {} : { "retry-after": String(failure.retryAfterSeconds) })
      }
    }
  )
