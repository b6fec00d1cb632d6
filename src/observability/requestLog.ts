import { HttpApiBuilder, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Context, DefaultServices, Effect, Exit, FiberRef, Metric, Option, Tracer } from "effect"
import { httpDurationOf, httpRequestsOf } from "./metricSeries.js"

/** What is learnt about a request while it is served, for its log line. Auth fills the account. */
interface RequestFacts {
  accountId: string | undefined
}

const CurrentRequestFacts = FiberRef.unsafeMake<RequestFacts | undefined>(undefined)

/** Notes the authenticated account of the request being served, for its log line. */
export const noteRequestAccount = (accountId: string): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const facts = fiber.getFiberRef(CurrentRequestFacts)
    if (facts !== undefined) facts.accountId = accountId
    return Effect.void
  })

/**
 * Stands in for the HTTP server span when the tracer middleware is off, so the router still
 * says which route answered (it writes `http.route` on the current span). Exports nothing.
 */
class RouteProbe implements Tracer.Span {
  readonly _tag = "Span"
  readonly name = "http.server"
  readonly spanId = "0000000000000000"
  readonly traceId = "00000000000000000000000000000000"
  readonly parent = Option.none<Tracer.AnySpan>()
  readonly context = Context.empty()
  readonly status: Tracer.SpanStatus = { _tag: "Started", startTime: 0n }
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink> = []
  readonly sampled = false
  readonly kind = "server" as const
  end() {}
  attribute(key: string, value: unknown) {
    this.attributes.set(key, value)
  }
  event() {}
  addLinks() {}
}

/** The server span of this request, opened by the platform's tracer middleware, if it is on. */
const serverSpanOf = (context: Context.Context<never>): Tracer.Span | undefined => {
  const span = Context.getOption(context, Tracer.ParentSpan)
  return span._tag === "Some" && span.value._tag === "Span" && span.value.kind === "server" && !span.value.attributes.has("http.route")
    ? span.value
    : undefined
}

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** Probes and scrapes, every few seconds from machines: logged at debug, counted in the metrics as any request. */
const QUIET_ROUTES = new Set(["/health", "/health/ready", "/metrics"])

/** Status of a request that ended without a response: 499 when the client went away, else 500. */
const statusOfFailure = (cause: Cause.Cause<unknown>) => (Cause.isInterruptedOnly(cause) ? 499 : 500)

/**
 * One log line per request (method, route template, path without its query, status, duration,
 * request id, account id once authenticated) and the HTTP metrics. The query string, headers
 * and bodies are never logged: signed upload URLs carry their signature in the query, and keys
 * travel in headers. Unmatched paths share the route label "unmatched", so scanners cannot
 * grow the metrics without bound.
 */
export const RequestLogMiddleware = HttpApiBuilder.middleware((app) =>
  Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    // Read in place rather than through Clock.currentTimeNanos: two fewer effects per request, same clock.
    const clock = Context.get(fiber.getFiberRef(DefaultServices.currentServices), Clock.Clock)
    const start = clock.unsafeCurrentTimeNanos()
    const facts: RequestFacts = { accountId: undefined }
    const span = serverSpanOf(fiber.currentContext)
    const probe = span === undefined ? new RouteProbe() : undefined
    const routed = probe === undefined ? app : Effect.withParentSpan(app, probe)
    return Effect.onExit(Effect.locally(routed, CurrentRequestFacts, facts), (exit) => {
      const route = String((span ?? probe!).attributes.get("http.route") ?? "unmatched")
      const status = Exit.isSuccess(exit) ? exit.value.status : statusOfFailure(exit.cause)
      const seconds = Number(clock.unsafeCurrentTimeNanos() - start) / 1e9
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
      return Effect.zipRight(
        status >= 500
          ? Effect.logWarning("http request", line)
          : QUIET_ROUTES.has(route)
          ? Effect.logDebug("http request", line)
          : Effect.logInfo("http request", line),
        Effect.zipRight(
          Metric.increment(httpRequestsOf(request.method, route, String(status))),
          Metric.update(httpDurationOf(request.method, route), seconds)
        )
      )
    })
  })
)
