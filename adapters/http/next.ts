import type { BasePathMountOptions, Mountable } from "./options.js"

type RouteHandler = (request: Request) => Promise<Response>

/** The route handlers of a Next.js App Router catch-all route, one per method. */
export interface NextRouteHandlers {
  readonly GET: RouteHandler
  readonly HEAD: RouteHandler
  readonly POST: RouteHandler
  readonly PUT: RouteHandler
  readonly PATCH: RouteHandler
  readonly DELETE: RouteHandler
  readonly OPTIONS: RouteHandler
}

/**
 * The engine as Next.js App Router route handlers, for `app/api/genjobs/[[...path]]/route.ts`:
 * `export const { GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD } = genjobsNext(engine, { basePath: "/api/genjobs" })`.
 * Next hands a route no socket: the client address is unknown (IP-restricted keys are refused)
 * unless `trustedProxyHops` or the engine's `clientAddress` names it; see docs/mounts.md.
 */
export const genjobsNext = (engine: Mountable, options: BasePathMountOptions = {}): NextRouteHandlers => {
  const handler: RouteHandler = (request) =>
    engine.fetch(request, { basePath: options.basePath, trustedProxyHops: options.trustedProxyHops })
  return { GET: handler, HEAD: handler, POST: handler, PUT: handler, PATCH: handler, DELETE: handler, OPTIONS: handler }
}
