import type { HttpServerRequest } from "effect/http"
import { Context } from "effect"

/** The id of the request being served: set by the error middleware, echoed in every answer. */
export const CurrentRequestId = Context.Reference<string>("genjobs/http/CurrentRequestId", {
  defaultValue: () => "req_unknown"
})

/**
 * What a host that mounts the web handler knows of one request and a web `Request` cannot
 * carry: the socket's peer address, and a proxy count for this mount.
 */
export class ClientPeer extends Context.Service<ClientPeer, {
  readonly remoteAddress: string | undefined
  readonly trustedProxyHops: number | undefined
}>()("genjobs/ClientPeer") {}

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
  const mounted = Context.getOrUndefined(context as Context.Context<ClientPeer>, ClientPeer)
  const peer = mounted?.remoteAddress ?? (request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined)
  const trustedProxyHops = mounted?.trustedProxyHops ?? configuredHops
  if (trustedProxyHops <= 0) return peer
  const forwarded = (request.headers["x-forwarded-for"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")
  return forwarded[forwarded.length - trustedProxyHops] ?? undefined
}
