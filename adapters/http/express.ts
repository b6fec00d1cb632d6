import type { IncomingMessage, ServerResponse } from "node:http"
import { type BodySource, serveNode } from "./nodeBridge.js"
import type { Mountable, MountOptions } from "./options.js"

/** The parts of an Express 5 request the mount reads; Express's own `Request` has them all. */
export interface ExpressRequestLike extends IncomingMessage {
  /** The path the mount was registered at, such as "/api/genjobs". */
  readonly baseUrl: string
  readonly originalUrl: string
  /** Set by body parsers (express.json(), urlencoded, text, raw) when they read the body. */
  readonly body?: unknown
}

export type ExpressHandler = (req: ExpressRequestLike, res: ServerResponse, next: (error?: unknown) => void) => void
export type ExpressErrorHandler = (
  error: unknown,
  req: ExpressRequestLike,
  res: ServerResponse,
  next: (error?: unknown) => void
) => void

/** A body parser already read the stream: give the engine the body it parsed, in the format it came in. */
const reserialised = (req: ExpressRequestLike): BodySource => {
  const body = req.body
  if (body === undefined || typeof body === "string") return { kind: "replaced", body }
  // express.raw() gives a Buffer, which may be a view of Node's shared pool: copy just its bytes.
  if (body instanceof Uint8Array) return { kind: "replaced", body: new Uint8Array(body) }
  const form = (req.headers["content-type"] ?? "").includes("application/x-www-form-urlencoded")
  return { kind: "replaced", body: form ? new URLSearchParams(body as Record<string, string>) : JSON.stringify(body) }
}

// body-parser's errors carry a `type` such as "entity.parse.failed" and a 4xx status.
const isBodyParserError = (error: unknown): error is { readonly type: string; readonly body?: unknown; readonly limit?: unknown } =>
  typeof error === "object" && error !== null && "type" in error && typeof error.type === "string" &&
  "status" in error && typeof error.status === "number" && error.status < 500

/**
 * The engine as Express 5 middleware, with or without the app's own body parsers:
 * `app.use("/api/genjobs", genjobsExpress(engine))`. The base path is taken from the mount.
 * The second handler catches a body parser's failure under this path (bad JSON, say) and lets the
 * engine answer it with its own JSON error, not Express's HTML page.
 */
export const genjobsExpress = (engine: Mountable, options: MountOptions = {}): [ExpressHandler, ExpressErrorHandler] => {
  const serve = (req: ExpressRequestLike, res: ServerResponse, body?: BodySource, refused?: { readonly limitBytes?: number | undefined }) =>
    serveNode(engine, req, res, req.originalUrl, {
      remoteAddress: req.socket.remoteAddress,
      basePath: req.baseUrl,
      trustedProxyHops: options.trustedProxyHops,
      bodyRefusedByHost: refused
    }, body)
  const handler: ExpressHandler = (req, res) => {
    void serve(req, res, req.readableEnded ? reserialised(req) : undefined)
  }
  const errorHandler: ExpressErrorHandler = (error, req, res, next) => {
    if (!isBodyParserError(error)) return next(error)
    // Refused for its size, the body was read off and dropped: the engine says whose limit it was.
    if (error.type === "entity.too.large") {
      return void serve(req, res, { kind: "replaced", body: undefined }, { limitBytes: typeof error.limit === "number" ? error.limit : undefined })
    }
    // The engine reads the raw text the parser refused and answers as for any body it cannot parse.
    void serve(req, res, { kind: "replaced", body: typeof error.body === "string" ? error.body : "" })
  }
  return [handler, errorHandler]
}
