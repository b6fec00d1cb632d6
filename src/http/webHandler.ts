import { Context, Effect, Layer, type Scope } from "effect"
import { HttpEffect, HttpMiddleware, HttpRouter, HttpServer, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { NotFound } from "../domain/errors.js"
import { PayloadTooLarge } from "../domain/limits.js"
import { newRequestId } from "../domain/ids.js"
import { renderOutsideApi } from "./errorEnvelope.js"
import { EngineHttpLive, type EngineHttpRequirements } from "./layer.js"
import { ClientPeer } from "./requestContext.js"

/** What a host knows of a request beyond the web `Request`; every field is optional. */
export interface RequestInfo {
  /** The socket's peer address. Without it (and without trusted proxies) IP-restricted keys are refused. */
  readonly remoteAddress?: string | undefined
  /** The path the engine is mounted under, such as "/api/genjobs"; overrides the handler's own. */
  readonly basePath?: string | undefined
  /** Proxies in front of this mount whose X-Forwarded-For entries are believed; overrides HttpConfig. */
  readonly trustedProxyHops?: number | undefined
  /**
   * The host's own body parser refused the body for its size and read it off before the engine
   * could (Express's `express.json()` at its 100 kB default, say), with its limit if known: the
   * engine answers 413 PAYLOAD_TOO_LARGE and says whose limit it was.
   */
  readonly bodyRefusedByHost?: { readonly limitBytes?: number | undefined } | undefined
}

/** The engine as a web-standard function: what every framework mount calls. */
export type EngineFetch = (request: Request, info?: RequestInfo) => Promise<Response>

export interface WebHandlerOptions {
  /** The path the engine is mounted under, such as "/api/genjobs". Default: the root. */
  readonly basePath?: string | undefined
  /** For hosts that know the client address from the request alone (a header their edge sets). */
  readonly clientAddress?: ((request: Request) => string | undefined) | undefined
}

export interface WebHandler {
  readonly fetch: EngineFetch
  /** Releases the handler's resources (not the engine's services). */
  readonly dispose: () => Promise<void>
}

/** "/api/genjobs/" and "api/genjobs" both mean "/api/genjobs"; "/" means the root. */
export const normalizeBasePath = (path: string | undefined): string => {
  const trimmed = (path ?? "").replace(/\/+$/, "")
  if (trimmed === "") return ""
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** Not routed at all: with the base path taken off, an outside path could match a route by chance. */
const outsideBasePath = (basePath: string): Response =>
  HttpServerResponse.toWeb(renderOutsideApi(
    new NotFound({ message: `Nothing here: the engine answers under ${basePath}` }),
    newRequestId()
  ))

/** A body the host's parser refused before the engine could read it: only its size is known, and it was too large there. */
const refusedByHost = (limitBytes: number | undefined): Response =>
  HttpServerResponse.toWeb(renderOutsideApi(
    new PayloadTooLarge({
      message: `The application's body parser refused this request body for its size${limitBytes === undefined ? "" : ` (its limit: ${limitBytes} bytes)`} ` +
        "before the engine could read it: mount the engine before that parser, or raise its limit",
      details: { maxBytes: limitBytes ?? null, refusedBy: "host" }
    }),
    newRequestId()
  ))

/** The request as the engine's routes see it, the base path taken off; undefined outside the base path. */
const underBasePath = (request: Request, basePath: string): Request | undefined => {
  if (basePath === "") return request
  const url = new URL(request.url)
  if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) return undefined
  url.pathname = url.pathname.slice(basePath.length) || "/"
  const hasBody = request.body !== null
  return new Request(url, {
    method: request.method,
    headers: request.headers,
    signal: request.signal,
    ...(hasBody ? { body: request.body, duplex: "half" } : {})
  } as RequestInit)
}

/** Mounts a web handler: the base path taken off and the host's knowledge of the client passed in. */
const mount = (
  handler: (request: Request, context: Context.Context<ClientPeer>) => Promise<Response>,
  options: WebHandlerOptions
): EngineFetch => {
  const defaultBasePath = normalizeBasePath(options.basePath)
  return (request, info = {}) => {
    const basePath = info.basePath === undefined ? defaultBasePath : normalizeBasePath(info.basePath)
    const peer = {
      remoteAddress: info.remoteAddress ?? options.clientAddress?.(request),
      trustedProxyHops: info.trustedProxyHops
    }
    const routed = underBasePath(request, basePath)
    if (routed === undefined) return Promise.resolve(outsideBasePath(basePath))
    if (info.bodyRefusedByHost !== undefined) return Promise.resolve(refusedByHost(info.bodyRefusedByHost.limitBytes))
    return handler(routed, Context.make(ClientPeer, peer))
  }
}

/**
 * The platform's span per request is named "http.server POST", as docs/observability.md lists it
 * (Effect 4's default is the bare method). Read where the request is served, outside the router.
 */
const serverSpanName = (request: HttpServerRequest.HttpServerRequest): string => `http.server ${request.method}`

/**
 * A web-standard handler over the engine's services, mountable under any path of any server.
 * The client address comes from the host (`info.remoteAddress`) since a `Request` has no socket.
 */
export const makeWebHandler = <E>(
  services: Layer.Layer<EngineHttpRequirements, E>,
  options: WebHandlerOptions = {}
): WebHandler => {
  const { dispose, handler } = HttpRouter.toWebHandler(
    // provideMerge: the router's own middlewares (the request log) run with the services too, and
    // with the loggers, log level and tracer they carry (References in Effect 4's context).
    // The span name first: a host's own generator in `services` wins.
    EngineHttpLive.pipe(Layer.provideMerge(Layer.mergeAll(
      Layer.succeed(HttpMiddleware.SpanNameGenerator)(serverSpanName),
      services,
      HttpServer.layerServices
    ))),
    // The engine logs its requests itself (observability/requestLog.ts).
    { disableLogger: true }
  )
  return { fetch: mount(handler, options), dispose }
}

/**
 * The same handler built on the calling fiber's services: requests see them and its Clock, so
 * under TestClock every request's time is the test's. Released with the scope.
 */
export const webHandlerInScope = (
  options: WebHandlerOptions = {}
): Effect.Effect<EngineFetch, never, EngineHttpRequirements | Scope.Scope> =>
  Effect.gen(function*() {
    const app = yield* HttpRouter.toHttpEffect(EngineHttpLive.pipe(Layer.provide(HttpServer.layerServices)))
    const services = Context.add(yield* Effect.context<EngineHttpRequirements>(), HttpMiddleware.SpanNameGenerator, serverSpanName)
    return mount(HttpEffect.toWebHandlerWith<EngineHttpRequirements, HttpServerRequest.HttpServerRequest | Scope.Scope>(services)(app), options)
  })
