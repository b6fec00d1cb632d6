import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Context, Effect, FiberRef, Option } from "effect"
import { CorruptRow, InternalError, NotFound, PubsubPublishFailed, retryLater, storeBusyOf, StoreError, ValidationError } from "../domain/errors.js"
import { type AnyRefusal, isRefusal } from "../domain/refusal.js"
import { RequestStoreWait, requestStoreWait } from "../ports/StoreWait.js"
import { newRequestId } from "../domain/ids.js"
import { EngineApi } from "./Api.js"
import { HttpConfig } from "./HttpConfig.js"
import { CurrentRequestId } from "./requestContext.js"
import { refusedBeforeBody, withBodyLimits } from "./requestLimits.js"

/**
 * A body's fields its schema does not declare (schemas/strictBody.ts), as dotted paths
 * (`scope`, `discounts.0.kind`): what a client compares with the fields it meant to send.
 */
const unknownFields = (issues: HttpApiError.HttpApiDecodeError["issues"]): ReadonlyArray<string> =>
  issues.filter((i) => i._tag === "Unexpected").map((i) => i.path.map(String).join("."))

const decodeFailure = ({ issues }: HttpApiError.HttpApiDecodeError) => {
  const errors = issues.map((i) => ({ path: `/${i.path.map(String).join("/")}`, message: i.message }))
  const unknown = unknownFields(issues)
  return unknown.length === 0
    ? new ValidationError({ message: "The request does not match the expected shape", details: { errors } })
    : new ValidationError({ message: `The request has fields this endpoint does not take: ${unknown.join(", ")}`, details: { unknown, errors } })
}

/**
 * What HttpApi raises before a handler runs, as the engine's error: its decode failure, a body
 * that is not JSON (HttpApi reads bodies with `orDie`, so it arrives as a defect), and a path
 * no route matches.
 */
const beforeHandler = (error: unknown): AnyRefusal | undefined => {
  if (error instanceof HttpApiError.HttpApiDecodeError) return decodeFailure(error)
  if (error instanceof HttpServerError.RequestError) return new ValidationError({ message: "The request body is not valid JSON" })
  if (error instanceof HttpServerError.RouteNotFound) return new NotFound({ message: "No such endpoint" })
  return undefined
}

const isSubmit = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" && /^\/v1\/jobs\/submit(?:\?|$)/.test(request.url)

/**
 * The spec names PUBSUB_PUBLISH_FAILED as submit's answer when the job cannot be queued; a
 * store failure anywhere on that route (the key lookup in the auth middleware included) means
 * exactly that, so it is answered so there (SERVICE_UNAVAILABLE everywhere else, see
 * errorEnvelope.ts), shed or failed alike (`retryLater`). A corrupt row stays the 500 it is
 * everywhere. A shed is counted, not logged (errorEnvelope.ts).
 */
const queueingFailed = (error: StoreError) =>
  Effect.zipRight(
    storeBusyOf(error) === undefined ? Effect.logError("store failure", error.message, error.cause) : Effect.void,
    Effect.fail(retryLater(PubsubPublishFailed, error))
  )

/**
 * Leaves the declared errors (the refusals, StoreError) to the API's encoding and turns the rest
 * into one: what HttpApi raises before a handler, and defects, logged and answered INTERNAL_ERROR.
 */
const declared = (request: HttpServerRequest.HttpServerRequest) => (cause: Cause.Cause<unknown>) => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
  const error = Option.getOrUndefined(Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause)))
  // A refusal, from a handler or as a request limit's defect (see requestLimits.ts).
  if (isRefusal(error)) return Effect.fail(error)
  if (error instanceof StoreError) {
    return isSubmit(request) && !(error.cause instanceof CorruptRow) ? queueingFailed(error) : Effect.fail(error)
  }
  const refusal = beforeHandler(error)
  if (refusal !== undefined) return Effect.fail(refusal)
  return Effect.logError("unhandled error while serving a request", Cause.pretty(cause)).pipe(
    Effect.zipRight(Effect.fail(new InternalError({ message: "An internal error occurred" })))
  )
}

/**
 * Gives every request an id (X-Request-Id) and its bound on waiting for the store
 * (`RequestStoreWait`: past it the request is shed), applies the request limits (body size, JSON
 * depth, NUL characters, repeated keys) and has every failure answered by the API's declared errors
 * (errorEnvelope.ts), encoded here, inside the request log's middleware, so the log sees the
 * status the client gets.
 */
export const ErrorEnvelopeMiddleware = HttpApiBuilder.middleware(Effect.gen(function*() {
  const config = yield* HttpConfig
  // HttpApi's own error encoding: every error schema of the API, each with its status.
  const encodeErrors = (yield* HttpApiBuilder.buildMiddleware(EngineApi)) as unknown as <R>(
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>
  const limits = { maxBytes: config.maxJsonBodyBytes, timeoutMs: config.bodyTimeoutMs, uploadIdleMs: config.uploadIdleTimeoutMs }
  return (app) =>
    Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>((fiber) => {
      const requestId = newRequestId()
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
      const refused = refusedBeforeBody(request, config.maxJsonBodyBytes)
      const served = refused === undefined
        ? Effect.provideService(app, HttpServerRequest.HttpServerRequest, withBodyLimits(request, limits))
        : Effect.fail(refused)
      const answered = encodeErrors(Effect.catchAllCause(served, declared(request))).pipe(
        Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)),
        // Every failure reaching the encoder is a declared error: only an interruption passes it.
        Effect.orDie,
        Effect.locally(CurrentRequestId, requestId)
      )
      // Set on the request's own fiber (the server gives each request one, which ends with it)
      // rather than with Effect.locally, whose acquire and release cost about 4 us a request
      // (measured): a set costs a fraction of one. A bound of 0 turns shedding off.
      return config.storeWaitMs === 0
        ? answered
        : Effect.zipRight(FiberRef.set(RequestStoreWait, requestStoreWait(config.storeWaitMs)), answered)
    })
}))
