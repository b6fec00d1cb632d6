import { HttpApp, HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Metric, ParseResult, Schema } from "effect"
import { CorruptRow, EngineError, engineError, type ErrorCode, retryLater, shedReasonOf, StoreError } from "../domain/errors.js"
import { requestsShedOf } from "../observability/metricSeries.js"
import { CurrentRequestId } from "./requestContext.js"

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

/** The codes answered with one status, in the order of the table above. */
export const codesWithStatus = (status: number): ReadonlyArray<ErrorCode> =>
  (Object.keys(statusOf) as Array<ErrorCode>).filter((code) => statusOf[code] === status)

/** Every status an error is answered with, ascending. */
export const errorStatuses: ReadonlyArray<number> = [...new Set(Object.values(statusOf))].sort((a, b) => a - b)

/** The name of a status's envelope among the OpenAPI document's components. */
export const errorComponent = (status: number) => `Error${status}`

/** What an operation of the API may fail with: the engine's refusals and the store's failures. */
type ApiError = EngineError | StoreError

const isApiError = (u: unknown): u is ApiError => u instanceof EngineError || u instanceof StoreError

/**
 * What the client is told of a failure. A store failure, or a request shed because the store
 * was busy, is a 503 to retry (`retryLater`), as nothing the client sent was wrong; a row the
 * store holds but cannot read is a 500, since retrying reads the same row.
 */
const answeredAs = (error: ApiError): EngineError =>
  error instanceof EngineError
    ? error
    : error.cause instanceof CorruptRow
    ? engineError("INTERNAL_ERROR", "An internal error occurred")
    : retryLater("SERVICE_UNAVAILABLE", error)

/** The spec's envelope for every error: {success:false, error:{code,message,details}, requestId}. */
const envelope = <C extends ErrorCode>(code: Schema.Schema<C>) =>
  Schema.Struct({
    success: Schema.Literal(false),
    error: Schema.Struct({
      code,
      message: Schema.String,
      details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
    }),
    requestId: Schema.String
  })

const envelopeOf = (error: EngineError, requestId: string) => ({
  success: false as const,
  error: { code: error.code, message: error.message, details: error.details ?? {} },
  requestId
})

/**
 * The headers an error's answer carries: Retry-After on refusals the client may retry later
 * (rate and concurrency limits, 503s), and a closed connection after a body that timed out, so
 * neither the unread rest of that body nor a stalled client holds the socket.
 */
const errorHeaders = (error: EngineError): Record<string, string> => ({
  ...(error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) }),
  ...(error.code === "REQUEST_TIMEOUT" ? { connection: "close" } : {})
})

/**
 * Store failures are logged where they are answered: the client sees only the code, the log the
 * cause. Shed requests are counted instead (genjobs_requests_shed_total): a burst shed is the
 * engine working as meant, and a log line per request would add to the burst.
 */
const logged = (error: ApiError, answer: EngineError): Effect.Effect<void> => {
  const shed = shedReasonOf(answer)
  if (shed !== undefined) return Metric.increment(requestsShedOf(shed))
  return error instanceof StoreError
    ? error.cause instanceof CorruptRow
      ? Effect.logError("corrupt row", { operation: error.cause.operation, rowId: error.cause.rowId ?? "unknown", issue: error.cause.issue })
      : Effect.logError("store failure", error.message, error.cause)
    : Effect.void
}

/**
 * The declared error of one status: an ApiError answered with that status, encoded as the
 * envelope with that status's codes as an enum (one OpenAPI component per status, so a
 * generated client knows every code it may meet and where). Encoding reads the request's id,
 * logs store failures and sets the answer's headers. A client (makeEffectClient) decodes the
 * envelope as it is, the typed refusal its callers match on.
 */
const errorOfStatus = (status: number) => {
  const [first, ...rest] = codesWithStatus(status)
  const encoded = envelope(Schema.Literal(first!, ...rest)).annotations({
    identifier: errorComponent(status),
    description: [first!, ...rest].join(", ")
  })
  const answered = Schema.declare((u): u is ApiError => isApiError(u) && statusOf[answeredAs(u).code] === status)
  return Schema.transformOrFail(encoded, Schema.Union(Schema.typeSchema(encoded), answered), {
    strict: false,
    decode: ParseResult.succeed,
    encode: (error) =>
      isApiError(error)
        ? Effect.gen(function*() {
          const answer = answeredAs(error)
          yield* logged(error, answer)
          const headers = errorHeaders(answer)
          if (Object.keys(headers).length > 0) {
            yield* HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
          }
          return envelopeOf(answer, yield* FiberRef.get(CurrentRequestId))
        })
        : ParseResult.succeed(error)
  }).annotations(HttpApiSchema.annotations({ status }))
}

/** Every error the API answers with, one schema per status; registered on the API with `addError`. */
export const ApiErrors = Schema.Union(...errorStatuses.map(errorOfStatus))

/**
 * An error answered outside the API's routing (a path outside the mount's base path, a body
 * the host refused): the same envelope and headers, rendered directly.
 */
export const renderOutsideApi = (error: EngineError, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(envelopeOf(error, requestId), {
    status: statusOf[error.code],
    headers: { "x-request-id": requestId, ...errorHeaders(error) }
  })
