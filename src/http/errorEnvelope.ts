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
  BUDGET_EXCEEDED: 402,
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
  PRECONDITION_FAILED: 412,
  UPLOAD_URL_INVALID: 403,
  UPLOAD_URL_EXPIRED: 403,
  UPLOAD_ALREADY_RECEIVED: 409,
  FILE_TOO_LARGE: 413,
  PAYLOAD_TOO_LARGE: 413,
  LENGTH_REQUIRED: 411,
  REQUEST_TIMEOUT: 408,
  CONCURRENT_JOBS_EXCEEDED: 429,
  RATE_LIMIT_EXCEEDED: 429,
  PUBSUB_PUBLISH_FAILED: 503,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500
}

export const httpStatusOf = (code: ErrorCode): number => statusOf[code]

/** The codes answered with one status, in the order of the table above. */
export const codesWithStatus = (status: number): ReadonlyArray<ErrorCode> =>
  (Object.keys(statusOf) as Array<ErrorCode>).filter((code) => statusOf[code] === status)

/** Every status an error is answered with, ascending. */
export const errorStatuses: ReadonlyArray<number> = [...new Set(Object.values(statusOf))].sort((a, b) => a - b)

/** The name of a status's envelope among the OpenAPI document's components. */
export const errorComponent = (status: number) => `Error${status}`

/**
 * The envelope of one status with its codes as an enum, so a generated client knows every code
 * it may meet and where; the OpenAPI document lists one per status on each operation.
 */
const documented = (status: number) => {
  const [first, ...rest] = codesWithStatus(status)
  return Schema.Struct({
    success: Schema.Literal(false),
    error: Schema.Struct({
      code: Schema.Literal(first!, ...rest),
      message: Schema.String,
      details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
    }),
    requestId: Schema.String
  }).annotations(HttpApiSchema.annotations({ status, identifier: errorComponent(status), description: [first!, ...rest].join(", ") }))
}

export const DocumentedErrors = Schema.Union(...errorStatuses.map(documented))

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
