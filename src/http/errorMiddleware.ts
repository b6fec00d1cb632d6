import { Cause, Context, Effect, Metric, Result, SchemaIssue, type Types } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import {
  CorruptRow,
  InternalError,
  NotFound,
  PubsubPublishFailed,
  retryLater,
  ServiceUnavailable,
  shedReasonOf,
  storeBusyOf,
  StoreError,
  ValidationError
} from "../domain/errors.js"
import { newRequestId } from "../domain/ids.js"
import { type AnyRefusal, isRefusal } from "../domain/refusal.js"
import { reasonLeafHook } from "../domain/schemaReasons.js"
import { requestsShedOf } from "../observability/metricSeries.js"
import { noteRequestRoute } from "../observability/requestLog.js"
import { RequestStoreWait, requestStoreWait } from "../ports/StoreWait.js"
import { renderOutsideApi } from "./errorEnvelope.js"
import { HttpConfig } from "./HttpConfig.js"
import { CurrentRequestId } from "./requestContext.js"
import { refusedBeforeBody, withBodyLimits } from "./requestLimits.js"
import { withSlugPathJoined } from "./slugPaths.js"

/** Marks the message of a field the body's schema does not declare, so it is told apart from the others. */
const UNEXPECTED = "\u0000unexpected\u0000"

// Worded as the catalog check words them (domain/schemaReasons.ts), as the API always has.
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => issue._tag === "UnexpectedKey" ? UNEXPECTED + reasonLeafHook(issue) : reasonLeafHook(issue)
})

const segment = (key: PropertyKey | { readonly key: PropertyKey }) => String(typeof key === "object" ? key.key : key)

/**
 * A request the API's schemas refused (its body, parameters or headers), as the engine's error.
 * A body's fields its schema does not declare (schemas/strictBody.ts) are named as dotted paths
 * (`scope`, `discounts.0.kind`): what a client compares with the fields it meant to send.
 */
const decodeFailure = (error: HttpApiError.HttpApiSchemaError) => {
  const issues = formatIssues(error.cause.issue).issues
  const errors = issues.map((i) => ({
    path: `/${(i.path ?? []).map(segment).join("/")}`,
    message: i.message.startsWith(UNEXPECTED) ? i.message.slice(UNEXPECTED.length) : i.message
  }))
  const unknown = issues.filter((i) => i.message.startsWith(UNEXPECTED)).map((i) => (i.path ?? []).map(segment).join("."))
  return unknown.length === 0
    ? new ValidationError({ message: "The request does not match the expected shape", details: { errors } })
    : new ValidationError({ message: `The request has fields this endpoint does not take: ${unknown.join(", ")}`, details: { unknown, errors } })
}

/**
 * What the router and HttpApi raise outside an endpoint's declared errors, as the engine's
 * error: a request its schemas refused (HttpApi makes it a defect), and a path no route matches.
 * A body that is not JSON is refused by the request limits (requestLimits.ts), before HttpApi
 * parses it.
 */
const beforeHandler = (error: unknown): AnyRefusal | undefined => {
  if (HttpApiError.HttpApiSchemaError.is(error) && error.kind !== "Body" && error.kind !== "ResponseHeaders") {
    return decodeFailure(error)
  }
  if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound") return new NotFound({ message: "No such endpoint" })
  return undefined
}

const notJson = () => new ValidationError({ message: "The request body must be JSON" })

/**
 * The spec names PUBSUB_PUBLISH_FAILED as submit's answer when the job cannot be queued; a
 * store failure anywhere on that route (the key lookup in the auth middleware included) means
 * exactly that, so it is answered so there (SERVICE_UNAVAILABLE everywhere else, see
 * errorEnvelope.ts), shed or failed alike (`retryLater`). A corrupt row stays the 500 it is
 * everywhere. A shed is counted, not logged (errorEnvelope.ts). Applied by the key check of the
 * submit route (authLayers.ts), around the check and the handler.
 */
export const queueingFailures = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PubsubPublishFailed, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, StoreError> => error instanceof StoreError && !(error.cause instanceof CorruptRow),
    (error) =>
      Effect.andThen(
        storeBusyOf(error) === undefined ? Effect.logError("store failure", error.message, error.cause) : Effect.void,
        Effect.fail(retryLater(PubsubPublishFailed, error))
      )
  )

/**
 * What a failure outside the API's declared errors is answered (the API's own are encoded by
 * each endpoint, errorEnvelope.ts): a refusal as it is (from a route outside the API, or a
 * request limit's defect, see requestLimits.ts), a store failure as 503 (500 for a corrupt row),
 * what HttpApi and the router raise as its refusal, and any other defect logged and answered
 * INTERNAL_ERROR. Logged and counted as errorEnvelope.ts does.
 */
const answerOf = (cause: Cause.Cause<unknown>): Effect.Effect<AnyRefusal> => {
  const failed = Cause.findError(cause)
  const died = Cause.findDefect(cause)
  const value = Result.isSuccess(failed) ? failed.success : Result.isSuccess(died) ? died.success : undefined
  if (isRefusal(value)) {
    const shed = shedReasonOf(value)
    return shed === undefined ? Effect.succeed(value) : Effect.as(Metric.update(requestsShedOf(shed), 1), value)
  }
  if (value instanceof StoreError) {
    if (value.cause instanceof CorruptRow) {
      return Effect.as(
        Effect.logError("corrupt row", { operation: value.cause.operation, rowId: value.cause.rowId ?? "unknown", issue: value.cause.issue }),
        new InternalError({ message: "An internal error occurred" })
      )
    }
    const answer = retryLater(ServiceUnavailable, value)
    const shed = shedReasonOf(answer)
    return shed === undefined
      ? Effect.as(Effect.logError("store failure", value.message, value.cause), answer)
      : Effect.as(Metric.update(requestsShedOf(shed), 1), answer)
  }
  const refusal = beforeHandler(value)
  if (refusal !== undefined) return Effect.succeed(refusal)
  return Effect.as(
    Effect.logError("unhandled error while serving a request", Cause.pretty(cause)),
    new InternalError({ message: "An internal error occurred" })
  )
}

/**
 * Gives every request an id (X-Request-Id) and its bound on waiting for the store
 * (`RequestStoreWait`: past it the request is shed), applies the request limits (body size, JSON
 * depth, NUL characters, repeated keys, UTF-8) and answers every failure that reaches it in the
 * envelope (errorEnvelope.ts), inside the request log's middleware, so the log sees the status
 * the client gets. A global middleware of the router: it wraps every route, and the answer to a
 * path no route matches.
 */
export const ErrorEnvelopeMiddleware = HttpRouter.middleware(
  Effect.gen(function*() {
    const config = yield* HttpConfig
    const limits = { maxBytes: config.maxJsonBodyBytes, timeoutMs: config.bodyTimeoutMs, uploadIdleMs: config.uploadIdleTimeoutMs }
    return (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>): Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      Types.unhandled
    > =>
      Effect.withFiber((fiber) => {
        const requestId = newRequestId()
        const request = withSlugPathJoined(Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest))
        const refused = refusedBeforeBody(request, config.maxJsonBodyBytes)
        const served: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = refused === undefined
          ? Effect.ensuring(app, noteRequestRoute)
          : Effect.fail(refused)
        const answered = served.pipe(
          Effect.catchCause((cause) =>
            // Only an interruption passes: the client left, nothing is answered.
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.map(answerOf(cause), (refusal) => renderOutsideApi(refusal, requestId))
          ),
          Effect.map((response) =>
            HttpServerResponse.setHeader(
              // HttpApi answers a body of another type than JSON 415 with a text body; the engine's answer is VALIDATION_ERROR.
              response.status === 415 ? renderOutsideApi(notJson(), requestId) : response,
              "x-request-id",
              requestId
            )
          )
        )
        // What the request adds to the context: its id, the request behind its limits, its store
        // bound (0 turns shedding off). Added one by one: an addition is an overlay on the
        // context, where a merge copied every service of the engine's context, twice.
        return Effect.updateContext(answered, (context: Context.Context<never>) => {
          let added = Context.add(context, CurrentRequestId, requestId)
          if (refused === undefined) added = Context.add(added, HttpServerRequest.HttpServerRequest, withBodyLimits(request, limits))
          if (config.storeWaitMs !== 0) added = Context.add(added, RequestStoreWait, requestStoreWait(config.storeWaitMs))
          return added as Context.Context<never>
        })
      })
  }),
  { global: true }
)
