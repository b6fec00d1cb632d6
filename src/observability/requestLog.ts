import { Cause, Clock, Context, Effect, Exit, Metric } from "effect"
import type { Types } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { httpDurationOf, httpRequestsOf } from "./metricSeries.js"

/** What is learnt about a request while it is served, for its log line. Auth fills the account, the router the route. */
interface RequestFacts {
  accountId: string | undefined
  route: string | undefined
}

const CurrentRequestFacts = Context.Reference<RequestFacts | undefined>("genjobs/observability/CurrentRequestFacts", {
  defaultValue: () => undefined
})

/** Notes the authenticated account of the request being served, for its log line. */
export const noteRequestAccount = (accountId: string): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const facts = fiber.getRef(CurrentRequestFacts)
    if (facts !== undefined) facts.accountId = accountId
    return Effect.void
  })

/**
 * Notes the route template that answered the request being served (`/v1/jobs/:jobId`), for its
 * log line and metrics: read off the fiber's context once the router's handler is done, while
 * the route it matched is still there (run it inside whatever provides services around the
 * router, as those give the context back as they end). Nothing when no route matched.
 */
export const noteRequestRoute: Effect.Effect<void> = Effect.withFiber((fiber) => {
  const facts = fiber.getRef(CurrentRequestFacts)
  const route = Context.getOrUndefined(fiber.context as Context.Context<HttpRouter.RouteContext>, HttpRouter.RouteContext)
  if (facts !== undefined && route !== undefined) facts.route = route.route.path
  return Effect.void
})

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** Probes and scrapes, every few seconds from machines: logged at debug, counted in the metrics as any request. */
const QUIET_ROUTES = new Set(["/health", "/health/ready", "/metrics"])

/** Status of a request that ended without a response: 499 when the client went away, else 500. */
const statusOfFailure = (cause: Cause.Cause<unknown>) => (Cause.hasInterruptsOnly(cause) ? 499 : 500)

/**
 * One log line per request (method, route template, path without its query, status, duration,
 * request id, account id once authenticated) and the HTTP metrics. The query string, headers
 * and bodies are never logged: signed upload URLs carry their signature in the query, and keys
 * travel in headers. Unmatched paths share the route label "unmatched", so scanners cannot
 * grow the metrics without bound.
 */
export const RequestLogMiddleware = HttpRouter.middleware(
  (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>): Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    Types.unhandled
  > =>
    Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      // Read in place rather than through Clock.currentTimeNanos: two fewer effects per request, same clock.
      const clock = fiber.getRef(Clock.Clock)
      const start = clock.currentTimeNanosUnsafe()
      const facts: RequestFacts = { accountId: undefined, route: undefined }
      return Effect.onExit(Effect.provideService(app, CurrentRequestFacts, facts), (exit) => {
        const route = facts.route ?? "unmatched"
        const status = Exit.isSuccess(exit) ? exit.value.status : statusOfFailure(exit.cause)
        const seconds = Number(clock.currentTimeNanosUnsafe() - start) / 1e9
        const requestId = Exit.isSuccess(exit) ? exit.value.headers["x-request-id"] : undefined
        const line = {
          method: request.method,
          route,
          path: pathOf(request.url),
          status,
          durationMs: Math.round(seconds * 1e4) / 10,
          ...(requestId === undefined ? {} : { requestId }),
          ...(facts.accountId === undefined ? {} : { accountId: facts.accountId })
        }
        return Effect.andThen(
          status >= 500
            ? Effect.logWarning("http request", line)
            : QUIET_ROUTES.has(route)
            ? Effect.logDebug("http request", line)
            : Effect.logInfo("http request", line),
          Effect.andThen(
            Metric.update(httpRequestsOf(request.method, route, String(status)), 1),
            Metric.update(httpDurationOf(request.method, route), seconds)
          )
        )
      })
    }),
  { global: true }
)
