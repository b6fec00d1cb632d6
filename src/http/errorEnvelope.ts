import { Effect, Metric, Schema, SchemaTransformation } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { HttpApiSchema } from "effect/http-api"
import {
  ApiKeyExpired,
  ApiKeyInactive,
  InvalidApiKey,
  IpNotWhitelisted,
  OperationNotAllowed,
  Unauthorized,
  UnauthorizedAccess
} from "../domain/accessRefusals.js"
import { ConcurrentJobsExceeded, IdempotencyKeyReused, InsufficientBalance, InvalidInput } from "../domain/admission.js"
import { BudgetExceeded } from "../domain/budget.js"
import { ModelAccessDenied, ModelNotFound, PreconditionFailed } from "../domain/catalog.js"
import {
  CorruptRow,
  InternalError,
  NotFound,
  PubsubPublishFailed,
  retryLater,
  ServiceUnavailable,
  shedReasonOf,
  StoreError,
  ValidationError
} from "../domain/errors.js"
import { JobCannotBeCancelled, JobNotFound } from "../domain/job.js"
import { PayloadTooLarge, RequestTimeout } from "../domain/limits.js"
import { RateLimitExceeded } from "../domain/rateLimit.js"
import { type AnyRefusal, isRefusal, type RefusalAnswer } from "../domain/refusal.js"
import {
  FileTooLarge,
  InvalidContentType,
  LengthRequired,
  UploadAlreadyReceived,
  UploadUrlExpired,
  UploadUrlInvalid
} from "../domain/uploadRefusals.js"
import { DeliveryNotRetryable } from "../domain/webhook.js"
import { requestsShedOf } from "../observability/metricSeries.js"
import { CurrentRequestId } from "./requestContext.js"

/** A refusal class as the HTTP layer reads it: its instances, its code and its status. */
export type RefusalClassOf = (abstract new(...args: ReadonlyArray<never>) => AnyRefusal) & RefusalAnswer

/**
 * Every refusal class, ordered as the spec's codes are listed (and so are the codes of each
 * status in the OpenAPI document).
 */
export const refusalClasses: ReadonlyArray<RefusalClassOf> = [
  ValidationError,
  InvalidInput,
  InvalidContentType,
  Unauthorized,
  InvalidApiKey,
  ApiKeyInactive,
  ApiKeyExpired,
  InsufficientBalance,
  BudgetExceeded,
  IpNotWhitelisted,
  OperationNotAllowed,
  ModelAccessDenied,
  UnauthorizedAccess,
  ModelNotFound,
  JobNotFound,
  NotFound,
  JobCannotBeCancelled,
  IdempotencyKeyReused,
  DeliveryNotRetryable,
  PreconditionFailed,
  UploadUrlInvalid,
  UploadUrlExpired,
  UploadAlreadyReceived,
  FileTooLarge,
  PayloadTooLarge,
  LengthRequired,
  RequestTimeout,
  ConcurrentJobsExceeded,
  RateLimitExceeded,
  PubsubPublishFailed,
  ServiceUnavailable,
  InternalError
]

/** The name of a status's envelope among the OpenAPI document's components. */
export const errorComponent = (status: number) => `Error${status}`

/** What an operation of the API may fail with: the engine's refusals and the store's failures. */
type ApiError = AnyRefusal | StoreError

/**
 * What the client is told of a failure. A store failure, or a request shed because the store
 * was busy, is a 503 to retry (`retryLater`), as nothing the client sent was wrong; a row the
 * store holds but cannot read is a 500, since retrying reads the same row.
 */
const answeredAs = (error: ApiError): AnyRefusal =>
  isRefusal(error)
    ? error
    : error.cause instanceof CorruptRow
    ? new InternalError({ message: "An internal error occurred" })
    : retryLater(ServiceUnavailable, error)

/** The spec's envelope for every error: {success:false, error:{code,message,details}, requestId}. */
const envelope = <C extends string>(code: Schema.Literal<C>) =>
  Schema.Struct({
    success: Schema.Literal(false),
    error: Schema.Struct({
      code,
      message: Schema.String,
      details: Schema.Record(Schema.String, Schema.Unknown)
    }),
    requestId: Schema.String
  })

const envelopeOf = (error: AnyRefusal, requestId: string) => ({
  success: false as const,
  error: { code: error.code, message: error.message, details: error.details ?? {} },
  requestId
})

/**
 * The headers an error's answer carries: Retry-After on refusals the client may retry later
 * (rate limits, 503s), and a closed connection after a body that timed out, so neither the
 * unread rest of that body nor a stalled client holds the socket.
 */
const errorHeaders = (error: AnyRefusal): Record<string, string> => ({
  ...(error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) }),
  ...(error instanceof RequestTimeout ? { connection: "close" } : {})
})

/**
 * Store failures are logged where they are answered: the client sees only the code, the log the
 * cause. Shed requests are counted instead (genjobs_requests_shed_total): a burst shed is the
 * engine working as meant, and a log line per request would add to the burst.
 */
const logged = (error: ApiError, answer: AnyRefusal): Effect.Effect<void> => {
  const shed = shedReasonOf(answer)
  if (shed !== undefined) return Metric.update(requestsShedOf(shed), 1)
  return error instanceof StoreError
    ? error.cause instanceof CorruptRow
      ? Effect.logError("corrupt row", { operation: error.cause.operation, rowId: error.cause.rowId ?? "unknown", issue: error.cause.issue })
      : Effect.logError("store failure", error.message, error.cause)
    : Effect.void
}

/**
 * Sets `headers` on the answer of the request this fiber serves. Read off the fiber's context
 * rather than required: an error schema's encoding that needs a service makes every endpoint's
 * handler type carry it.
 */
const setsHeaders = (headers: Record<string, string>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    HttpEffect.appendPreResponseHandlerUnsafe(fiber.context, (_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
    return Effect.void
  })

/** The code and status an answer schema stands for, read back by the OpenAPI document (openApi.ts). */
export const RefusalAnswerId = "genjobs/http/RefusalAnswer"

/** The code and status a declared error schema answers with, when it is one of answerOf's. */
export const refusalAnswerOf = (schema: Schema.Top): RefusalAnswer | undefined =>
  schema.ast.annotations?.[RefusalAnswerId] as RefusalAnswer | undefined

/**
 * One declared error: the failures `answers` picks out, answered with `answer`'s status and
 * encoded as the envelope with its code. Encoding reads the request's id, logs store failures
 * and sets the answer's headers. A client (makeEffectClient) decodes the envelope as it is, the
 * typed refusal its callers match on.
 */
const declaredError = <E extends ApiError>(answer: RefusalAnswer, answers: (u: unknown) => u is E) => {
  const encoded = envelope(Schema.Literal(answer.code))
  return encoded.pipe(
    Schema.decodeTo(
      Schema.Union([Schema.toType(encoded), Schema.declare(answers)]),
      SchemaTransformation.transformEffect({
        decode: Effect.succeed,
        encode: (error) =>
          answers(error)
            ? Effect.gen(function*() {
              const answered = answeredAs(error)
              yield* logged(error, answered)
              const headers = errorHeaders(answered)
              if (Object.keys(headers).length > 0) {
                yield* setsHeaders(headers)
              }
              return envelopeOf(answered, yield* CurrentRequestId)
            })
            // Not one `answers` picks out: the envelope as it is (TypeScript does not narrow a generic guard's else).
            : Effect.succeed(error as typeof encoded.Type)
      })
    ),
    HttpApiSchema.status(answer.status)
  )
}

/** The declared error of every refusal of one class: a handler of an endpoint that declares it may fail with that class. */
const errorOfClass = <C extends RefusalClassOf>(refusal: C) => declaredError(refusal, (u): u is InstanceType<C> => u instanceof refusal)

/** The declared error of one refusal class (of any of a union of classes). */
export type DeclaredRefusal<C extends RefusalClassOf> = ReturnType<typeof errorOfClass<C>>

const answers = new Map<RefusalClassOf, DeclaredRefusal<RefusalClassOf>>()

/**
 * The declared error of one refusal class, for an endpoint's or a middleware's `error` (through
 * `refusing`, and middleware.ts): made once per class, and marked with its code and status for
 * the OpenAPI document, which lists what each operation declares (openApi.ts).
 */
export const answerOf = <C extends RefusalClassOf>(refusal: C): DeclaredRefusal<C> => {
  const known = answers.get(refusal)
  // The map holds each class's own declaration, so the one found is this class's.
  if (known !== undefined) return known as DeclaredRefusal<C>
  const made = errorOfClass(refusal).annotate({ [RefusalAnswerId]: { code: refusal.code, status: refusal.status } })
  answers.set(refusal, made)
  return made
}

/** A store failure, answered 503 SERVICE_UNAVAILABLE with Retry-After (or shed: `retryLater`). */
const storeUnavailable = declaredError(
  ServiceUnavailable,
  (u): u is StoreError => u instanceof StoreError && !(u.cause instanceof CorruptRow)
)

/** A row the store holds but cannot read, answered 500 INTERNAL_ERROR. */
const storeCorrupt = declaredError(InternalError, (u): u is StoreError => u instanceof StoreError && u.cause instanceof CorruptRow)

/**
 * What any request may be answered (`anyRequestRefusals`), readable by a client of every
 * endpoint, but typed as raised by no handler: a handler that raises one (a ValidationError of
 * its own checks, a watcher cap's ServiceUnavailable) declares it on its endpoint, so an
 * endpoint's type lists what its handler raises. Most reach the answer outside HttpApi's
 * encoding (a request limit's defect, a body that does not decode); one that reaches it anyway
 * is still answered with its own code and status. Unmarked: the document lists these for every
 * operation itself (openApi.ts).
 */
const anyRequestAnswer = (refusal: RefusalClassOf) => declaredError(refusal, (u): u is never => u instanceof refusal)

/**
 * An error answered outside an endpoint's own encoding (a path no route matches, a request
 * limit, a route outside the API, a path outside the mount's base path, a body the host
 * refused): the same envelope and headers, rendered directly.
 */
export const renderOutsideApi = (error: AnyRefusal, requestId: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(envelopeOf(error, requestId), {
    status: error.status,
    headers: { "x-request-id": requestId, ...errorHeaders(error) }
  })

/**
 * An endpoint's declared refusals, for its `error`: what its handler may fail with (besides the
 * store's failures, `anyRequestErrors`), and what the OpenAPI document lists for it.
 */
export const refusing = <const Cs extends ReadonlyArray<RefusalClassOf>>(...refusals: Cs): ReadonlyArray<DeclaredRefusal<Cs[number]>> =>
  refusals.map(answerOf)

/** What an API key's check refuses (ApiKeyAuth, OptionalApiKeyAuth): no key, a wrong, inactive or expired one, an address off its list, too many guesses. */
export const keyRefusals = [
  Unauthorized,
  InvalidApiKey,
  ApiKeyInactive,
  ApiKeyExpired,
  IpNotWhitelisted,
  RateLimitExceeded
] as const satisfies ReadonlyArray<RefusalClassOf>

/** What the admin token's check refuses (AdminAuth): the admin API off (404), no token, a wrong one, too many guesses. */
export const adminRefusals = [NotFound, Unauthorized, InvalidApiKey, RateLimitExceeded] as const satisfies ReadonlyArray<RefusalClassOf>

/**
 * What any request may be answered, whatever its operation: a body or parameters that do not
 * decode or break the request limits, a body too slow to arrive, the store out of reach, a defect.
 */
export const anyRequestRefusals: ReadonlyArray<RefusalClassOf> = [
  ValidationError,
  PayloadTooLarge,
  RequestTimeout,
  ServiceUnavailable,
  InternalError
]

/**
 * What every middleware declares (middleware.ts), so every endpoint behind it: the answers of
 * any request, and the store's failures, which any handler may meet. Separate schemas, not a
 * union: HttpApi reads each one's status.
 */
export const anyRequestErrors = [...anyRequestRefusals.map(anyRequestAnswer), storeUnavailable, storeCorrupt]
