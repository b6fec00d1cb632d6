import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Context, Effect, Option } from "effect"
import { type EngineError, engineError, STORE_RETRY_AFTER_SECONDS } from "../domain/errors.js"
import { newRequestId } from "../domain/ids.js"
import { ApiFailure, renderFailure } from "./errorEnvelope.js"
import { HttpConfig } from "./HttpConfig.js"
import { CurrentRequestId } from "./requestContext.js"
import { refusedBeforeBody, withBodyLimits } from "./requestLimits.js"

interface DecodeIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/**
 * A body's fields its schema does not declare (schemas/strictBody.ts), as dotted paths
 * (`scope`, `discounts.0.kind`): what a client compares with the fields it meant to send.
 */
const unknownFields = (issues: ReadonlyArray<DecodeIssue>): ReadonlyArray<string> =>
  issues.filter((i) => i._tag === "Unexpected").map((i) => i.path.map(String).join("."))

const decodeFailure = (issues: ReadonlyArray<DecodeIssue>) => {
  const errors = issues.map((i) => ({ path: `/${i.path.map(String).join("/")}`, message: i.message }))
  const unknown = unknownFields(issues)
  return unknown.length === 0
    ? engineError("VALIDATION_ERROR", "The request does not match the expected shape", { errors })
    : engineError("VALIDATION_ERROR", `The request has fields this endpoint does not take: ${unknown.join(", ")}`, { unknown, errors })
}

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" ? u._tag : undefined

/** Turns a failure that is not yet an ApiFailure into one, so every error leaves in the envelope. */
const asFailure = (error: unknown, requestId: string): ApiFailure | undefined => {
  if (error instanceof ApiFailure) return error
  switch (tagOf(error)) {
    case "HttpApiDecodeError":
      return ApiFailure.fromEngine(decodeFailure((error as { issues: ReadonlyArray<DecodeIssue> }).issues), requestId)
    case "RequestError":
      return ApiFailure.fromEngine(engineError("VALIDATION_ERROR", "The request body is not valid JSON"), requestId)
    case "RouteNotFound":
      return ApiFailure.fromEngine(engineError("NOT_FOUND", "No such endpoint"), requestId)
    // The request limits refuse with an EngineError as a defect (see requestLimits.ts).
    case "EngineError":
      return ApiFailure.fromEngine(error as EngineError, requestId)
    default:
      return undefined
  }
}

const isSubmit = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "POST" && /^\/v1\/jobs\/submit(?:\?|$)/.test(request.url)

/**
 * The spec names PUBSUB_PUBLISH_FAILED as submit's answer when the job cannot be queued; a
 * store failure anywhere on that route (the key lookup in the auth middleware included) means
 * exactly that, so it is answered so there, and SERVICE_UNAVAILABLE everywhere else.
 */
const onRoute = (failure: ApiFailure, request: HttpServerRequest.HttpServerRequest): ApiFailure =>
  failure.error.code === "SERVICE_UNAVAILABLE" && isSubmit(request)
    ? ApiFailure.fromEngine(
      engineError("PUBSUB_PUBLISH_FAILED", "The job could not be queued; nothing was charged, retry", {}, STORE_RETRY_AFTER_SECONDS),
      failure.requestId
    )
    : failure

/**
 * A body that timed out was left unread: the connection is closed after the answer, so neither
 * the rest of that body nor a stalled client holds the socket (Node closes it once the 408 is sent).
 */
const closingWhenTimedOut = (response: HttpServerResponse.HttpServerResponse, failure: ApiFailure) =>
  failure.error.code === "REQUEST_TIMEOUT" ? HttpServerResponse.setHeader(response, "connection", "close") : response

/**
 * Gives every request an id (X-Request-Id), applies the request limits (body size, JSON depth,
 * NUL characters) and renders every failure in the spec's envelope with its status and
 * Retry-After; defects are logged and answered as INTERNAL_ERROR.
 */
export const ErrorEnvelopeMiddleware = HttpApiBuilder.middleware(Effect.map(HttpConfig, (config) => (app) =>
  Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>((fiber) => {
    const requestId = newRequestId()
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const refused = refusedBeforeBody(request, config.maxJsonBodyBytes)
    const limits = { maxBytes: config.maxJsonBodyBytes, timeoutMs: config.bodyTimeoutMs, uploadIdleMs: config.uploadIdleTimeoutMs }
    const served = refused === undefined
      ? Effect.provideService(app, HttpServerRequest.HttpServerRequest, withBodyLimits(request, limits))
      : Effect.die(refused)
    return served.pipe(
      Effect.matchCauseEffect({
        onSuccess: (response) => Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId)),
        onFailure: (cause) => {
          // A body that is not JSON, or over the limits, arrives as a defect, so defects are looked at too.
          const failure = Option.match(Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause)), {
            onNone: () => undefined,
            onSome: (error) => asFailure(error, requestId)
          })
          if (failure !== undefined) return Effect.succeed(closingWhenTimedOut(renderFailure(onRoute(failure, request)), failure))
          if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
          return Effect.logError("unhandled error while serving a request", Cause.pretty(cause)).pipe(
            Effect.as(renderFailure(ApiFailure.fromEngine(engineError("INTERNAL_ERROR", "An internal error occurred"), requestId)))
          )
        }
      }),
      Effect.locally(CurrentRequestId, requestId)
    )
  })))
