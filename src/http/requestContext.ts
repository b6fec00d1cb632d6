import type { HttpServerRequest } from "@effect/platform"
import { Context, Effect, FiberRef, Option } from "effect"
import { type EngineError, engineError, STORE_RETRY_AFTER_SECONDS, StoreError } from "../domain/errors.js"
import { ApiFailure } from "./errorEnvelope.js"

/** The id of the request being served: set by the error middleware, echoed in every answer. */
export const CurrentRequestId = FiberRef.unsafeMake<string>("req_unknown")

/**
 * What a host that mounts the web handler knows of one request and a web `Request` cannot
 * carry: the socket's peer address, and a proxy count for this mount.
 */
export class ClientPeer extends Context.Tag("genjobs/ClientPeer")<ClientPeer, {
  readonly remoteAddress: string | undefined
  readonly trustedProxyHops: number | undefined
}>() {}

/**
 * The client address. Without trusted proxies it is the socket's peer; with N trusted proxies
 * in front, it is the Nth address from the right of X-Forwarded-For (the one our nearest
 * trusted proxy saw). Unknown addresses stay unknown, so IP-restricted keys fail closed.
 * Read from the request and the context of the fiber serving it.
 */
export const clientAddress = (
  request: HttpServerRequest.HttpServerRequest,
  context: Context.Context<never>,
  configuredHops: number
): string | undefined => {
  const mounted = Option.getOrUndefined(Context.getOption(context as Context.Context<ClientPeer>, ClientPeer))
  const peer = mounted?.remoteAddress ?? Option.getOrUndefined(request.remoteAddress)
  const trustedProxyHops = mounted?.trustedProxyHops ?? configuredHops
  if (trustedProxyHops <= 0) return peer
  const forwarded = (request.headers["x-forwarded-for"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")
  return forwarded[forwarded.length - trustedProxyHops] ?? undefined
}

/**
 * Maps the engine's errors to the envelope. A store failure is logged and answered 503
 * SERVICE_UNAVAILABLE with Retry-After: nothing the client sent was wrong, and a retry after a
 * failover may well succeed, which a 500 would not tell it.
 */
export const toApiFailure = <A, R>(effect: Effect.Effect<A, EngineError | StoreError, R>): Effect.Effect<A, ApiFailure, R> =>
  Effect.catchAll(effect, (error) =>
    Effect.flatMap(FiberRef.get(CurrentRequestId), (requestId) =>
      error instanceof StoreError
        ? Effect.logError("store failure", error.message, error.cause).pipe(
          Effect.zipRight(Effect.fail(ApiFailure.fromEngine(
            engineError("SERVICE_UNAVAILABLE", "The service cannot be reached for a moment; retry", {}, STORE_RETRY_AFTER_SECONDS),
            requestId
          )))
        )
        : Effect.fail(ApiFailure.fromEngine(error, requestId))))
