import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { engineError } from "../domain/errors.js"
import { newRequestId } from "../domain/ids.js"
import { ApiFailure, renderFailure } from "./errorEnvelope.js"
import { CurrentRequestId } from "./requestContext.js"

interface DecodeIssue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" ? u._tag : undefined

/** Turns a failure that is not yet an ApiFailure into one, so every error leaves in the envelope. */
const asFailure = (error: unknown, requestId: string): ApiFailure | undefined => {
  if (error instanceof ApiFailure) return error
  switch (tagOf(error)) {
    case "HttpApiDecodeError": {
      const issues = (error as { issues: ReadonlyArray<DecodeIssue> }).issues
      return ApiFailure.fromEngine(
        engineError("VALIDATION_ERROR", "The request does not match the expected shape", {
          errors: issues.map((i) => ({ path: `/${i.path.map(String).join("/")}`, message: i.message }))
        }),
        requestId
      )
    }
    case "RequestError":
      return ApiFailure.fromEngine(engineError("VALIDATION_ERROR", "The request body is not valid JSON"), requestId)
    case "RouteNotFound":
      return ApiFailure.fromEngine(engineError("NOT_FOUND", "No such endpoint"), requestId)
    default:
      return undefined
  }
}

/**
 * Gives every request an id (X-Request-Id) and renders every failure in the spec's envelope
 * with its status and Retry-After; defects are logged and answered as INTERNAL_ERROR.
 */
export const ErrorEnvelopeMiddleware = HttpApiBuilder.middleware((app) =>
  Effect.gen(function*() {
    const requestId = newRequestId()
    return yield* app.pipe(
      Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)),
      Effect.catchAllCause((cause) => {
        // A body that is not JSON arrives as a defect (RequestError), so defects are looked at too.
        const failure = Option.match(Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause)), {
          onNone: () => undefined,
          onSome: (error) => asFailure(error, requestId)
        })
        if (failure !== undefined) return Effect.succeed(renderFailure(failure))
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        return Effect.logError("unhandled error while serving a request", Cause.pretty(cause)).pipe(
          Effect.as(renderFailure(ApiFailure.fromEngine(engineError("INTERNAL_ERROR", "An internal error occurred"), requestId)))
        )
      }),
      Effect.locally(CurrentRequestId, requestId)
    )
  }))
