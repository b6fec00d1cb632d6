import type { IncomingMessage } from "node:http"
import type { Mountable, MountOptions } from "./options.js"

/** The parts of a Hono context the handler reads; Hono's `Context` has them all. */
export interface HonoContextLike {
  // Hono 4 marks `routePath` deprecated for the `routePath(c)` helper, which would mean importing Hono.
  readonly req: { readonly raw: Request; readonly routePath: string }
  /** Under @hono/node-server, `env.incoming` is the Node request, whose socket knows the client. */
  readonly env?: unknown
}

/** Called as a route handler with a context, or by `mount()` (and `app.mount`) with the request and the env. */
export interface HonoHandler {
  (c: HonoContextLike): Promise<Response>
  (request: Request, env?: unknown): Promise<Response>
}

export interface HonoMountOptions extends MountOptions {
  /**
   * The path the engine is mounted under. Default: the route's path without its trailing "/*"
   * (so "/api/genjobs" for `app.all("/api/genjobs/*", ...)`); under `mount()` the path is already off.
   */
  readonly basePath?: string | undefined
}

const socketAddress = (env: unknown): string | undefined => {
  const incoming = typeof env === "object" && env !== null && "incoming" in env
    ? (env.incoming as IncomingMessage | undefined)
    : undefined
  return incoming?.socket?.remoteAddress
}

/**
 * The engine as a Hono handler: `app.all("/api/genjobs/*", genjobsHono(engine))`, or under
 * `mount()`: `app.all("/api/genjobs/*", mount(genjobsHono(engine)))`. Without @hono/node-server
 * there is no socket to ask, so the client address is unknown unless trusted proxies name it.
 */
export const genjobsHono = (engine: Mountable, options: HonoMountOptions = {}): HonoHandler =>
  ((target: HonoContextLike | Request, mountEnv?: unknown) => {
    if (target instanceof Request) {
      // mount() has taken the base path off the URL already.
      return engine.fetch(target, { remoteAddress: socketAddress(mountEnv), basePath: "", trustedProxyHops: options.trustedProxyHops })
    }
    return engine.fetch(target.req.raw, {
      remoteAddress: socketAddress(target.env),
      basePath: options.basePath ?? target.req.routePath.replace(/\/\*$/, ""),
      trustedProxyHops: options.trustedProxyHops
    })
  }) as HonoHandler
