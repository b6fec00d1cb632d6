/**
 * The plumbing the OpenAI and Runway simulators share: a node:http server on 127.0.0.1, JSON
 * answers, streamed file bodies, and a queue of faults a test puts in front of the next requests.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** What the next API request gets instead of (or before) its normal answer. */
export type Fault =
  | { readonly _tag: "Status"; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "Malformed" }
  | { readonly _tag: "Slow"; readonly ms: number }

export interface FaultControls {
  /** The next `times` API requests answer 429 with this Retry-After (seconds) and these headers. */
  readonly rateLimitNext: (times: number, options?: { readonly retryAfterSeconds?: number; readonly headers?: Readonly<Record<string, string>> }) => void
  /** The next API request answers this status with the provider's error body for `message`. */
  readonly failNext: (status: number, message?: string) => void
  /** The next API request answers 200 with a body that is not the documented JSON. */
  readonly malformedNext: () => void
  /** The next API request is answered after `ms` milliseconds. */
  readonly slowNext: (ms: number) => void
}

export const faultQueue = (errorBody: (message: string, status: number) => unknown) => {
  const queue: Array<Fault> = []
  const controls: FaultControls = {
    rateLimitNext: (times, options = {}) => {
      for (let i = 0; i < times; i++) {
        queue.push({
          _tag: "Status",
          status: 429,
          body: errorBody("Rate limit reached, please try again later", 429),
          headers: { ...(options.retryAfterSeconds === undefined ? {} : { "retry-after": String(options.retryAfterSeconds) }), ...options.headers }
        })
      }
    },
    failNext: (status, message = `Simulated error ${status}`) => void queue.push({ _tag: "Status", status, body: errorBody(message, status) }),
    malformedNext: () => void queue.push({ _tag: "Malformed" }),
    slowNext: (ms) => void queue.push({ _tag: "Slow", ms })
  }
  return { controls, take: (): Fault | undefined => queue.shift() }
}

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(body))
}

/** Answers a fault: true when the request is answered, false when it goes on (after a slow start). */
export const applyFault = async (fault: Fault | undefined, res: ServerResponse): Promise<boolean> => {
  if (fault === undefined) return false
  switch (fault._tag) {
    case "Slow":
      await new Promise((resolve) => setTimeout(resolve, fault.ms))
      return false
    case "Malformed":
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{\"id\": 42, \"status\": [\"not what the documentation says\"")
      return true
    case "Status":
      sendJson(res, fault.status, fault.body, fault.headers)
      return true
  }
}

/** The request body as JSON; undefined when it is not JSON. */
export const readJson = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"))
  } catch {
    return undefined
  }
}

export const bearerOf = (req: IncomingMessage): string | undefined => /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]

/** `total` bytes starting with `head`, written in 64 KiB chunks as the client takes them. */
export const streamBytes = async (res: ServerResponse, contentType: string, head: Uint8Array, total: number) => {
  res.writeHead(200, { "content-type": contentType, "content-length": String(Math.max(total, head.length)) })
  const chunk = Buffer.alloc(64 * 1024, 0x2a)
  let left = Math.max(total, head.length) - head.length
  if (head.length > 0 && !res.write(head)) await new Promise((resolve) => res.once("drain", resolve))
  while (left > 0 && !res.destroyed) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left)
    left -= piece.length
    if (!res.write(piece)) await new Promise((resolve) => res.once("drain", resolve))
  }
  res.end()
}

export interface Listening {
  /** http://127.0.0.1:port */
  readonly origin: string
  readonly close: () => Promise<void>
}

export const listen = async (port: number, handler: (req: IncomingMessage, res: ServerResponse, origin: string) => Promise<void>): Promise<Listening> => {
  let origin = ""
  const server = createServer((req, res) => {
    handler(req, res, origin).catch((error) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(error) })
      else res.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A 1x1 PNG: real bytes, small. */
export const PNG_BYTES = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==",
  "base64"
)
/** The start of an MP4 file (an ftyp box); the simulators pad it to the size they are asked for. */
export const MP4_HEAD = Buffer.from("000000186674797069736f6d0000020069736f6d6d703432", "hex")
