/**
 * What every provider simulator shares: a node:http server on 127.0.0.1, faults injected on
 * demand (429 with Retry-After, other errors, slow or malformed answers), counters a test reads,
 * and output files served from the simulator itself, a large one generated as it streams.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { TINY_PNG, TINY_WAV } from "../../adapters/testing/outputs.js"

/** What kind of file a simulated model makes, from words in its name: "large" (a big video), video, audio, text, else image. */
export type OutputKind = "image" | "video" | "audio" | "text" | "large"

export const kindOfModel = (model: string): OutputKind =>
  /large/i.test(model)
    ? "large"
    : /video/i.test(model)
    ? "video"
    : /audio|music|speech|sound/i.test(model)
    ? "audio"
    : /text|llm|llama|chat/i.test(model)
    ? "text"
    : "image"

/** Input fields a test sets to steer one generation. */
export interface Steering {
  /** The generation fails with this message. */
  readonly fail?: string | undefined
  /** The generation takes this long instead of the simulator's duration. */
  readonly durationMs?: number | undefined
}

export const steeringOf = (input: Readonly<Record<string, unknown>>): Steering => ({
  fail: typeof input["sim_fail"] === "string" ? input["sim_fail"] : undefined,
  durationMs: typeof input["sim_duration_ms"] === "number" ? input["sim_duration_ms"] : undefined
})

export type Fault =
  | { readonly _tag: "RateLimit"; readonly retryAfterSeconds: number }
  | { readonly _tag: "Error"; readonly status: number; readonly body: unknown }
  | { readonly _tag: "Slow"; readonly delayMs: number }
  | { readonly _tag: "Malformed" }

interface Queued {
  readonly fault: Fault
  readonly on: string | undefined
  remaining: number
}

/** Options every simulator takes. */
export interface SimulatorOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number | undefined
  /** How long a generation runs. Default 200 ms. */
  readonly durationMs?: number | undefined
  /** The size of the "large" output file. Default 200 MB. */
  readonly largeFileBytes?: number | undefined
  /** The input field whose value counts starts (`startsByMarker`). Default "prompt". */
  readonly markerField?: string | undefined
}

export interface Counters {
  /** Generations started (accepted), in all. */
  starts: number
  /** Generations started per value of the marker input field. */
  readonly startsByMarker: Map<string, number>
  polls: number
  cancels: number
  /** API requests of any kind, faults included. */
  requests: number
  /** Generations started and not yet finished; and the most there ever were at once. */
  inFlight: number
  maxInFlight: number
  /** Callbacks sent and how each went (HTTP status, or the error). */
  readonly callbacks: Array<{ readonly url: string; readonly outcome: number | string }>
}

/** The fault controls and counters every simulator exposes to tests. */
export interface SimulatorControls {
  readonly url: string
  readonly counters: Counters
  /** The next `count` API requests (of operation `on`, when given) answer 429 with Retry-After. */
  readonly rateLimitNext: (count: number, retryAfterSeconds?: number, on?: string) => void
  /** The next `count` API requests (of operation `on`) answer this status and JSON body. */
  readonly errorNext: (count: number, status: number, body?: unknown, on?: string) => void
  /** The next `count` API requests (of operation `on`) are answered after `delayMs`. */
  readonly slowNext: (count: number, delayMs: number, on?: string) => void
  /** The next `count` API requests (of operation `on`) answer 200 with a body in no documented shape. */
  readonly malformedNext: (count: number, on?: string) => void
  /** Forgets queued faults and zeroes the counters. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

export const newCounters = (): Counters => ({
  starts: 0,
  startsByMarker: new Map(),
  polls: 0,
  cancels: 0,
  requests: 0,
  inFlight: 0,
  maxInFlight: 0,
  callbacks: []
})

export const countStart = (counters: Counters, input: Readonly<Record<string, unknown>>, markerField: string) => {
  const marker = String(input[markerField] ?? "")
  counters.starts++
  counters.startsByMarker.set(marker, (counters.startsByMarker.get(marker) ?? 0) + 1)
  counters.inFlight++
  counters.maxInFlight = Math.max(counters.maxInFlight, counters.inFlight)
}

export class Faults {
  private queue: Array<Queued> = []
  add(fault: Fault, count: number, on: string | undefined) {
    if (count > 0) this.queue.push({ fault, on, remaining: count })
  }
  /** The fault this request of `operation` meets, if any; each queued fault is used `count` times. */
  take(operation: string): Fault | undefined {
    const entry = this.queue.find((q) => q.on === undefined || q.on === operation)
    if (entry === undefined) return undefined
    entry.remaining--
    if (entry.remaining === 0) this.queue = this.queue.filter((q) => q !== entry)
    return entry.fault
  }
  clear() {
    this.queue = []
  }
}

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
  res.end(text)
}

export const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

export const parseJson = (bytes: Buffer): unknown => {
  try {
    return JSON.parse(bytes.toString("utf8"))
  } catch {
    return undefined
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Applies a queued fault: true when it answered the request (the handler stops there). */
export const applyFault = async (fault: Fault | undefined, res: ServerResponse): Promise<boolean> => {
  if (fault === undefined) return false
  switch (fault._tag) {
    case "RateLimit":
      sendJson(res, 429, { title: "Request was throttled.", detail: `Expected available in ${fault.retryAfterSeconds} seconds.`, status: 429 }, {
        "retry-after": String(fault.retryAfterSeconds)
      })
      return true
    case "Error":
      sendJson(res, fault.status, fault.body)
      return true
    case "Malformed":
      sendJson(res, 200, { unexpected: [1, 2, 3] })
      return true
    case "Slow":
      await new Promise((resolve) => setTimeout(resolve, fault.delayMs))
      return false
  }
}

export const randomId = (length = 26): string => {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
  return [...randomBytes(length)].map((b) => alphabet[b % 32]).join("")
}

/** A few bytes a player would take for an MP4 (an ftyp box then an empty mdat). */
const TINY_MP4 = Buffer.concat([
  Buffer.from([0, 0, 0, 24]), Buffer.from("ftypisom"), Buffer.from([0, 0, 2, 0]), Buffer.from("isomiso2"),
  Buffer.from([0, 0, 0, 8]), Buffer.from("mdat")
])

export const fileNameOf = (kind: Exclude<OutputKind, "text">): string =>
  ({ image: "output.png", video: "output.mp4", audio: "output.wav", large: "large.mp4" })[kind]

export const contentTypeOf = (kind: Exclude<OutputKind, "text">): string =>
  ({ image: "image/png", video: "video/mp4", audio: "audio/wav", large: "video/mp4" })[kind]

/**
 * GET /files/{generation}/{name}: the output files. large.mp4 is `largeFileBytes` made as it is
 * sent, one reused chunk at a time and only as fast as the reader takes it, so the simulator never
 * holds it in memory.
 */
export const serveFile = (res: ServerResponse, name: string, largeFileBytes: number) => {
  const small: Record<string, readonly [Uint8Array, string]> = {
    "output.png": [TINY_PNG, "image/png"],
    "output.wav": [TINY_WAV, "audio/wav"],
    "output.mp4": [TINY_MP4, "video/mp4"]
  }
  const file = small[name]
  if (file !== undefined) {
    res.writeHead(200, { "content-type": file[1], "content-length": file[0].length })
    res.end(file[0])
    return
  }
  if (name !== "large.mp4") {
    sendJson(res, 404, { detail: "Not found." })
    return
  }
  res.writeHead(200, { "content-type": "video/mp4", "content-length": largeFileBytes })
  const chunk = Buffer.alloc(64 * 1024, 7)
  TINY_MP4.copy(chunk)
  let sent = 0
  const pump = () => {
    while (sent < largeFileBytes) {
      const part = Math.min(chunk.length, largeFileBytes - sent)
      sent += part
      if (!res.write(part === chunk.length ? chunk : chunk.subarray(0, part))) {
        res.once("drain", pump)
        return
      }
    }
    res.end()
  }
  res.on("close", () => res.removeAllListeners("drain"))
  pump()
}

/** Starts a server on 127.0.0.1; handler errors answer 500 rather than crash the test process. */
export const listen = async (
  port: number,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>
): Promise<{ readonly server: Server; readonly url: string }> => {
  const server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { detail: `simulator error: ${String(error)}` })
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 1000
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

export const closeServer = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** Timers a simulator holds (completions, callbacks): cleared on close so nothing fires after a test. */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>()
  after(ms: number, run: () => void) {
    const timer = setTimeout(() => {
      this.pending.delete(timer)
      run()
    }, ms)
    this.pending.add(timer)
  }
  clear() {
    for (const timer of this.pending) clearTimeout(timer)
    this.pending.clear()
  }
}

/** The controls every simulator returns, over its faults and counters. */
export const controls = (
  url: string,
  faults: Faults,
  counters: Counters,
  onReset: () => void,
  close: () => Promise<void>
): SimulatorControls => ({
  url,
  counters,
  rateLimitNext: (count, retryAfterSeconds = 1, on) => faults.add({ _tag: "RateLimit", retryAfterSeconds }, count, on),
  errorNext: (count, status, body = { detail: `Simulated error ${status}` }, on) => faults.add({ _tag: "Error", status, body }, count, on),
  slowNext: (count, delayMs, on) => faults.add({ _tag: "Slow", delayMs }, count, on),
  malformedNext: (count, on) => faults.add({ _tag: "Malformed" }, count, on),
  reset: () => {
    faults.clear()
    Object.assign(counters, { ...newCounters(), startsByMarker: counters.startsByMarker, callbacks: counters.callbacks })
    counters.startsByMarker.clear()
    counters.callbacks.length = 0
    onReset()
  },
  close
})

/** Sends a callback and records how it went; a callback that cannot be delivered is recorded, not retried. */
export const deliver = async (
  counters: Counters,
  url: string,
  body: string,
  headers: Record<string, string>
): Promise<void> => {
  try {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })
    await response.arrayBuffer()
    counters.callbacks.push({ url, outcome: response.status })
  } catch (error) {
    counters.callbacks.push({ url, outcome: String(error) })
  }
}
