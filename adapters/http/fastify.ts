import type { IncomingMessage, ServerResponse } from "node:http"
import { serveNode } from "./nodeBridge.js"
import type { Mountable, MountOptions } from "./options.js"

/** The parts of a Fastify 5 instance the plugin uses; Fastify's `FastifyInstance` has them all. */
export interface FastifyInstanceLike {
  /** The full prefix this plugin was registered under, such as "/api/genjobs". */
  readonly prefix: string
  removeAllContentTypeParsers(): unknown
  addContentTypeParser(
    contentType: string,
    parser: (request: unknown, payload: IncomingMessage, done: (error: Error | null, body?: unknown) => void) => void
  ): unknown
  route(options: {
    readonly method: Array<string>
    readonly url: string
    readonly handler: (request: { readonly raw: IncomingMessage }, reply: FastifyReplyLike) => Promise<void>
  }): unknown
}

export interface FastifyReplyLike {
  readonly raw: ServerResponse
  hijack(): unknown
}

export type FastifyPlugin = (instance: FastifyInstanceLike) => Promise<void>

// Every method the engine answers; HEAD is listed so Fastify does not derive its own from GET.
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

/**
 * The engine as a Fastify 5 plugin: `app.register(genjobsFastify(engine), { prefix: "/api/genjobs" })`.
 * Inside its own encapsulated context it replaces the content-type parsers with one that leaves
 * the body unread, so the engine reads the stream itself; the app's parsers are untouched.
 * Fastify enforces `bodyLimit` only in the parsers that read the body themselves, so under the
 * prefix the engine's own limits apply, with its 413 PAYLOAD_TOO_LARGE.
 */
export const genjobsFastify = (engine: Mountable, options: MountOptions = {}): FastifyPlugin => async (instance) => {
  instance.removeAllContentTypeParsers()
  instance.addContentTypeParser("*", (_request, _payload, done) => done(null))
  const handler = async (request: { readonly raw: IncomingMessage }, reply: FastifyReplyLike) => {
    reply.hijack()
    await serveNode(engine, request.raw, reply.raw, request.raw.url ?? "/", {
      remoteAddress: request.raw.socket.remoteAddress,
      basePath: instance.prefix,
      trustedProxyHops: options.trustedProxyHops
    })
  }
  instance.route({ method: METHODS, url: "/", handler })
  instance.route({ method: METHODS, url: "/*", handler })
}
