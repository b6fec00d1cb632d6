import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as NodeWebStream } from "node:stream/web"
import type { RequestInfo } from "../../src/http/webHandler.js"
import type { Mountable } from "./options.js"

/** Which body the engine reads: the request stream itself, or one a framework already parsed and we re-serialised. */
export type BodySource = { readonly kind: "stream" } | { readonly kind: "replaced"; readonly body: BodyInit | undefined }

const STREAM: BodySource = { kind: "stream" }

// A replaced body has its own length and no transfer coding: the original framing would lie about it.
const FRAMING_HEADERS = new Set(["content-length", "content-encoding", "transfer-encoding"])

const webHeaders = (req: IncomingMessage, body: BodySource): Headers => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    // HTTP/2 pseudo-headers (":path") are not headers a Request may carry.
    if (value === undefined || name.startsWith(":")) continue
    if (body.kind === "replaced" && FRAMING_HEADERS.has(name)) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  return headers
}

/**
 * A web Request for a Node request. `url` is the path as the client sent it (base path included);
 * the body streams from the socket unless a framework already read it. `signal` aborts it.
 */
export const toWebRequest = (req: IncomingMessage, url: string, body: BodySource, signal: AbortSignal): Request => {
  const scheme = "encrypted" in req.socket && req.socket.encrypted === true ? "https" : "http"
  const method = req.method ?? "GET"
  const init: RequestInit & { duplex?: "half" } = { method, headers: webHeaders(req, body), signal }
  if (method !== "GET" && method !== "HEAD") {
    if (body.kind === "replaced") {
      if (body.body !== undefined) init.body = body.body
    } else {
      init.body = Readable.toWeb(req) as ReadableStream<Uint8Array>
      init.duplex = "half"
    }
  }
  return new Request(new URL(url, `${scheme}://${req.headers.host ?? "localhost"}`), init)
}

/** Writes a web Response to a Node response: status, every header (each Set-Cookie apart), streamed body. */
export const sendWebResponse = async (response: Response, res: ServerResponse): Promise<void> => {
  const headers: Record<string, string | Array<string>> = {}
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers["set-cookie"] = cookies
  res.writeHead(response.status, headers)
  if (response.body === null) {
    res.end()
    return
  }
  await pipeline(Readable.fromWeb(response.body as NodeWebStream<Uint8Array>), res)
}

/** The server a connection came in on: Node sets `socket.server` on the sockets of net and TLS servers. */
interface ClosableServer {
  readonly listening: boolean
  closeIdleConnections(): void
}
const serverOf = (req: IncomingMessage): ClosableServer | undefined => {
  const server: unknown = (req.socket as { readonly server?: unknown }).server
  return typeof server === "object" && server !== null && "listening" in server &&
      "closeIdleConnections" in server && typeof server.closeIdleConnections === "function"
    ? server as ClosableServer
    : undefined
}

/**
 * Reads off and drops what is left of a body the engine answered without reading to the end (a
 * 413 on its Content-Length, a 401 before a large upload), as Node does for a request nobody
 * read: the web stream over it has paused the socket, and the next request on a kept-alive
 * connection would wait behind the unread bytes (Fastify) or be reset (node:http). Only the web
 * stream's own listener is removed; the request stays open and its end frees the connection.
 *
 * The client has its answer while the connection is still busy reading off, so the server may
 * be closed meanwhile (SIGTERM right after the 413): Node's close() ends only the connections
 * idle at that instant, and this one, idle once the body is read off, would stay open for the
 * keep-alive timeout (Fastify's is 72 s), holding close() and the shutdown up. So once both the
 * body is read off and the answer written, a server that has stopped listening gets its idle
 * connections closed, as close() would have done.
 */
const discardUnreadBody = (req: IncomingMessage, res: ServerResponse) => {
  if (req.readableEnded || req.destroyed) return
  req.removeAllListeners("data")
  req.resume()
  const closeIfServerClosed = () => {
    if (!req.readableEnded || !res.writableFinished) return
    const server = serverOf(req)
    if (server !== undefined && !server.listening) server.closeIdleConnections()
  }
  req.once("end", closeIfServerClosed)
  res.once("finish", closeIfServerClosed)
}

/**
 * Answers one Node request with the engine. Resolves when the answer is written or the client
 * has gone (the engine's work for it is then aborted); never rejects, so a listener can drop it.
 */
export const serveNode = async (
  engine: Mountable,
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  info: RequestInfo,
  body: BodySource = STREAM
): Promise<void> => {
  const controller = new AbortController()
  res.once("close", () => {
    if (!res.writableFinished) controller.abort()
  })
  try {
    const response = await engine.fetch(toWebRequest(req, url, body, controller.signal), info)
    if (body.kind === "stream") discardUnreadBody(req, res)
    await sendWebResponse(response, res)
  } catch {
    // The client left mid-answer, or the engine failed before answering: nothing more can be said.
    if (res.headersSent) res.destroy()
    else res.writeHead(500).end()
  }
}
