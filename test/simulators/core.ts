/**
 * What every provider simulator shares: a node:http server on 127.0.0.1, JSON answers, faults a
 * test puts in front of the next requests (429 with Retry-After, other errors, slow or malformed
 * answers), counters a test reads, timers cleared on close, signed callbacks sent out, and output
 * files served from the simulator itself, a large one generated as it streams.
 * Tests and the dev server only: production code never imports this.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { TINY_PNG, TINY_WAV } from "../../adapters/testing/outputs.js"

/** Options every simulator takes. */
export interface SimulatorOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number | undefined
  /** How long a generation runs. */
  readonly durationMs?: number | undefined
  /** The input field whose value counts starts (`startsByMarker`). Default "prompt". */
  readonly markerField?: string | undefined
  /**
   * The keep-alive the server announces and keeps, in ms. Default 10 s, so that the engine's
   * pool reuses connections as with a provider's API (decisions.md, "A stale pooled connection
   * and a start"); 1000 or less gives each request a connection of its own, as undici closes a
   * connection 2 s before the announced end.
   */
  readonly keepAliveMs?: number | undefined
  /**
   * Closes a connection idle this long (ms) while a request is on its way to it: a request that
   * arrives on a connection idle longer is dropped unread and the connection closed, as by a
   * server (or a load balancer) whose idle close crossed the request. No such close by default.
   */
  readonly idleCloseMs?: number | undefined
}

/** What kind of file a simulated model makes, from words in its name: "large" (a big video), video, audio, text, else image. */
export type OutputKind = "image" | "video" | "audio" | "text" | "large"

const kindOfModel = (model: string): OutputKind =>
  /large/i.test(model)
    ? "large"
    : /video/i.test(model)
    ? "video"
    : /audio|music|speech|sound/i.test(model)
    ? "audio"
    : /text|llm|llama|chat/i.test(model)
    ? "text"
    : "image"

/** For simulators whose models make files by the words in their names (kindOfModel). */
export interface ModelFileOptions {
  /** The size of the "large" output file. Default 200 MB. */
  readonly largeFileBytes?: number | undefined
  /** What a model makes; default from words in its name (kindOfModel). */
  readonly outputFor?: ((model: string, input: Readonly<Record<string, unknown>>) => OutputKind) | undefined
}

export interface ModelSettings {
  readonly durationMs: number
  readonly largeFileBytes: number
  readonly outputFor: (model: string, input: Readonly<Record<string, unknown>>) => OutputKind
}

export const modelSettings = (options: SimulatorOptions & ModelFileOptions): ModelSettings => ({
  durationMs: options.durationMs ?? 200,
  largeFileBytes: options.largeFileBytes ?? 200 * 1024 * 1024,
  outputFor: options.outputFor ?? ((model: string) => kindOfModel(model))
})

/** Input fields a test sets to steer one generation. */
interface Steering {
  /** The generation fails with this message. */
  readonly fail?: string | undefined
  /** The provider's error type or code its failure carries, where the provider documents one (fal's `type`). */
  readonly failCode?: string | undefined
  /** The generation takes this long instead of the simulator's duration. */
  readonly durationMs?: number | undefined
}

const steeringOf = (input: Readonly<Record<string, unknown>>): Steering => ({
  fail: typeof input["sim_fail"] === "string" ? input["sim_fail"] : undefined,
  failCode: typeof input["sim_fail_code"] === "string" ? input["sim_fail_code"] : undefined,
  durationMs: typeof input["sim_duration_ms"] === "number" ? input["sim_duration_ms"] : undefined
})

/** A generation of a model that makes files by its name, steered by its input. */
export interface ModelGeneration {
  readonly model: string
  readonly input: Record<string, unknown>
  readonly createdAt: number
  readonly durationMs: number
  /** The message it fails with, when the input says so. */
  readonly fail: string | undefined
  /** The provider's error type or code for that failure (`sim_fail_code`). */
  readonly failCode: string | undefined
  readonly kind: OutputKind
  readonly run: InFlight
}

/** Accepts a generation: counted as started, and `onDone` called when its duration is up. */
export const startModelGeneration = (
  core: SimulatorCore,
  settings: ModelSettings,
  model: string,
  input: Record<string, unknown>,
  onDone: () => void
): ModelGeneration => {
  const steering = steeringOf(input)
  const durationMs = steering.durationMs ?? settings.durationMs
  core.timers.after(durationMs, onDone)
  return { model, input, createdAt: Date.now(), durationMs, fail: steering.fail, failCode: steering.failCode, kind: settings.outputFor(model, input), run: core.started(input) }
}

// ---- Faults and counters

/** What the next API request gets instead of (or before) its normal answer. */
type Fault =
  | { readonly _tag: "Status"; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "Slow"; readonly delayMs: number }
  | { readonly _tag: "Late"; readonly delayMs: number }
  | { readonly _tag: "Malformed" }

/** Which requests a fault meets: those of operation `on` ("start", "poll", "cancel", ...), else any. */
export interface FaultOptions {
  readonly on?: string | undefined
}

export interface Counters {
  /** Generations started (accepted), in all: what the provider would charge for. */
  starts: number
  /** Generations started per value of the marker input field. */
  readonly startsByMarker: Map<string, number>
  polls: number
  cancels: number
  /** Output files fetched. */
  downloads: number
  /** API requests of any kind, faults included. */
  requests: number
  /** Requests answered 429. */
  rateLimited: number
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
  /** The next `count` API requests answer 429, with Retry-After when `retryAfterSeconds` is given, and `headers`. */
  readonly rateLimitNext: (
    count: number,
    options?: FaultOptions & { readonly retryAfterSeconds?: number; readonly headers?: Readonly<Record<string, string>> }
  ) => void
  /** The next `count` API requests answer `status` with `body`, else the provider's error body for `message`. */
  readonly errorNext: (
    count: number,
    status: number,
    options?: FaultOptions & { readonly message?: string; readonly body?: unknown; readonly headers?: Readonly<Record<string, string>> }
  ) => void
  /** The next `count` API requests are answered after `delayMs`. */
  readonly slowNext: (count: number, delayMs: number, options?: FaultOptions) => void
  /**
   * The next `count` API requests are carried out at once (a start creates its generation) but
   * their answers are held back `delayMs`: a client that dies meanwhile never learns the outcome.
   */
  readonly answerLateNext: (count: number, delayMs: number, options?: FaultOptions) => void
  /** The next `count` API requests answer 200 with a body that is not the documented JSON. */
  readonly malformedNext: (count: number, options?: FaultOptions) => void
  /**
   * Stops accepting connections (they are refused, as by a provider that is down) and drops open
   * ones, keeping the port; `comeBack` listens on it again. Generations and timers go on.
   */
  readonly goDown: () => Promise<void>
  readonly comeBack: () => Promise<void>
  /** Forgets queued faults and zeroes the counters; generations still running end uncounted. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

const newCounters = (): Counters => ({
  starts: 0,
  startsByMarker: new Map(),
  polls: 0,
  cancels: 0,
  downloads: 0,
  requests: 0,
  rateLimited: 0,
  inFlight: 0,
  maxInFlight: 0,
  callbacks: []
})

interface Queued {
  readonly fault: Fault
  readonly on: string | undefined
  remaining: number
}

class Faults {
  private queue: Array<Queued> = []
  add(fault: Fault, count: number, options: FaultOptions | undefined) {
    if (count > 0) this.queue.push({ fault, on: options?.on, remaining: count })
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

/** Timers a simulator holds (completions, callbacks): cleared on close so nothing fires after a test. */
class Timers {
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

/** A generation the counters hold in flight. */
export interface InFlight {
  /** It ended (done, failed or cancelled): no longer in flight. True the first time only. */
  readonly end: () => boolean
}

/** The body a malformed answer carries: cut short, and in no documented shape. */
const MALFORMED_BODY = "{\"id\": 42, \"status\": [\"not what the documentation says\""

/**
 * One simulator's faults, counters and timers. `errorBody` is the provider's own error body for
 * a message (what errorNext and rateLimitNext answer with).
 */
export const simulatorCore = (setup: {
  readonly errorBody: (message: string, status: number) => unknown
  readonly markerField: string
}) => {
  const counters = newCounters()
  const faults = new Faults()
  const timers = new Timers()
  const running = new Set<InFlight>()
  return {
    counters,
    timers,
    /** Counts an API request of `operation` and answers it with its fault, if any: true when answered. */
    intercept: async (operation: string, res: ServerResponse): Promise<boolean> => {
      counters.requests++
      const fault = faults.take(operation)
      if (fault === undefined) return false
      switch (fault._tag) {
        case "Slow":
          await new Promise((resolve) => setTimeout(resolve, fault.delayMs))
          return false
        case "Late": {
          const end = res.end.bind(res) as (...args: Array<unknown>) => ServerResponse
          res.end = ((...args: Array<unknown>) => {
            timers.after(fault.delayMs, () => end(...args))
            return res
          }) as ServerResponse["end"]
          return false
        }
        case "Malformed":
          res.writeHead(200, { "content-type": "application/json" })
          res.end(MALFORMED_BODY)
          return true
        case "Status":
          if (fault.status === 429) counters.rateLimited++
          sendJson(res, fault.status, fault.body, fault.headers)
          return true
      }
    },
    /** A generation was accepted: counted as a start (by its marker field) and in flight until it ends. */
    started: (input: Readonly<Record<string, unknown>>): InFlight => {
      const marker = String(input[setup.markerField] ?? "")
      counters.starts++
      counters.startsByMarker.set(marker, (counters.startsByMarker.get(marker) ?? 0) + 1)
      counters.inFlight++
      counters.maxInFlight = Math.max(counters.maxInFlight, counters.inFlight)
      const generation: InFlight = {
        end: () => {
          if (!running.delete(generation)) return false
          counters.inFlight--
          return true
        }
      }
      running.add(generation)
      return generation
    },
    controls: (listening: Listening): SimulatorControls => ({
      url: listening.url,
      counters,
      rateLimitNext: (count, options = {}) =>
        faults.add({
          _tag: "Status",
          status: 429,
          body: setup.errorBody("Rate limit reached, please try again later", 429),
          headers: {
            ...(options.retryAfterSeconds === undefined ? {} : { "retry-after": String(options.retryAfterSeconds) }),
            ...options.headers
          }
        }, count, options),
      errorNext: (count, status, options = {}) =>
        faults.add({
          _tag: "Status",
          status,
          body: "body" in options ? options.body : setup.errorBody(options.message ?? `Simulated error ${status}`, status),
          ...(options.headers === undefined ? {} : { headers: options.headers })
        }, count, options),
      slowNext: (count, delayMs, options) => faults.add({ _tag: "Slow", delayMs }, count, options),
      answerLateNext: (count, delayMs, options) => faults.add({ _tag: "Late", delayMs }, count, options),
      goDown: listening.stop,
      comeBack: listening.resume,
      malformedNext: (count, options) => faults.add({ _tag: "Malformed" }, count, options),
      reset: () => {
        faults.clear()
        running.clear()
        const { startsByMarker, callbacks } = counters
        Object.assign(counters, { ...newCounters(), startsByMarker, callbacks })
        startsByMarker.clear()
        callbacks.length = 0
      },
      close: async () => {
        timers.clear()
        await listening.close()
      }
    })
  }
}

export type SimulatorCore = ReturnType<typeof simulatorCore>

// ---- HTTP

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
  res.end(text)
}

const readBody = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const parseJson = (bytes: Buffer): unknown => {
  try {
    return JSON.parse(bytes.toString("utf8"))
  } catch {
    return undefined
  }
}

/** The request body as JSON; undefined when it is not JSON. */
export const readJson = async (req: IncomingMessage): Promise<unknown> => parseJson(await readBody(req))

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const bearerOf = (req: IncomingMessage): string | undefined => /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]

export interface Listening {
  /** http://127.0.0.1:port */
  readonly url: string
  readonly close: () => Promise<void>
  /** Stops listening (new connections are refused) and drops open connections; the port is kept for `resume`. */
  readonly stop: () => Promise<void>
  readonly resume: () => Promise<void>
}

/** How a simulator's server keeps its connections (SimulatorOptions). */
export type ConnectionOptions = Pick<SimulatorOptions, "keepAliveMs" | "idleCloseMs">

/** Starts a server on 127.0.0.1; handler errors answer 500 rather than crash the test process. */
export const listen = async (
  port: number,
  handler: (req: IncomingMessage, res: ServerResponse, origin: string) => Promise<void>,
  { idleCloseMs, keepAliveMs = 10_000 }: ConnectionOptions = {}
): Promise<Listening> => {
  let origin = ""
  // When each connection last finished an answer (idleCloseMs).
  const answeredAt = new WeakMap<object, number>()
  const server = createServer((req, res) => {
    const idleSince = answeredAt.get(req.socket)
    if (idleCloseMs !== undefined && idleSince !== undefined && Date.now() - idleSince > idleCloseMs) {
      req.socket.destroy()
      return
    }
    if (idleCloseMs !== undefined) res.on("finish", () => answeredAt.set(req.socket, Date.now()))
    handler(req, res, origin).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { detail: `simulator error: ${String(error)}` })
      else res.destroy()
    })
  })
  server.keepAliveTimeout = keepAliveMs
  const listenOn = (on: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(on, "127.0.0.1", () => {
        server.off("error", reject)
        resolve()
      })
    })
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve()
      server.close(() => resolve())
      server.closeAllConnections()
    })
  await listenOn(port)
  const bound = (server.address() as AddressInfo).port
  origin = `http://127.0.0.1:${bound}`
  return { url: origin, close: stop, stop, resume: () => listenOn(bound) }
}

/**
 * listen, with GET /files/{generation}/{name} served by serveFile (and counted as a download)
 * before the provider's API, which gets the request's URL.
 */
export const listenServingFiles = (
  options: {
    readonly port: number
    readonly largeFileBytes: number
    readonly counters: Counters
    /** When given, a file request it refuses answers 401 (files behind the API's credentials). */
    readonly authorized?: ((req: IncomingMessage) => boolean) | undefined
    /** SimulatorOptions.keepAliveMs and idleCloseMs. */
    readonly connections?: ConnectionOptions | undefined
  },
  api: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>
): Promise<Listening> =>
  listen(options.port, async (req, res) => {
    const url = new URL(req.url ?? "/", "http://simulator")
    const file = /^\/files\/([^/]+)\/([^/]+)$/.exec(url.pathname)
    if (file === null || req.method !== "GET") return api(req, res, url)
    if (options.authorized !== undefined && !options.authorized(req)) return sendJson(res, 401, { detail: "Unauthenticated" })
    options.counters.downloads++
    return serveFile(res, file[2]!, options.largeFileBytes)
  }, options.connections)

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

export const randomId = (length = 26): string => {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
  return [...randomBytes(length)].map((b) => alphabet[b % 32]).join("")
}

// ---- Files

export { TINY_PNG }

/** A few bytes a player would take for an MP4 (an ftyp box then an empty mdat); the start of every simulated video. */
export const TINY_MP4 = Buffer.concat([
  Buffer.from([0, 0, 0, 24]), Buffer.from("ftypisom"), Buffer.from([0, 0, 2, 0]), Buffer.from("isomiso2"),
  Buffer.from([0, 0, 0, 8]), Buffer.from("mdat")
])

/**
 * `total` bytes starting with `head`, written in 64 KiB chunks only as fast as the client takes
 * them, so that a large file is never held in memory; stops when the client goes away.
 */
export const streamBytes = async (res: ServerResponse, contentType: string, head: Uint8Array, total: number) => {
  const size = Math.max(total, head.length)
  res.writeHead(200, { "content-type": contentType, "content-length": String(size) })
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done)
        res.off("close", done)
        resolve()
      }
      res.once("drain", done)
      res.once("close", done)
    })
  if (head.length > 0 && !res.write(head)) await drained()
  const chunk = Buffer.alloc(64 * 1024, 0x2a)
  let left = size - head.length
  while (left > 0 && !res.destroyed) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left)
    left -= piece.length
    if (!res.write(piece)) await drained()
  }
  res.end()
}

export const fileNameOf = (kind: Exclude<OutputKind, "text">): string =>
  ({ image: "output.png", video: "output.mp4", audio: "output.wav", large: "large.mp4" })[kind]

export const contentTypeOf = (kind: Exclude<OutputKind, "text">): string =>
  ({ image: "image/png", video: "video/mp4", audio: "audio/wav", large: "video/mp4" })[kind]

/** GET /files/{generation}/{name}: the output files of kindOfModel; large.mp4 is `largeFileBytes` made as it is sent. */
const serveFile = (res: ServerResponse, name: string, largeFileBytes: number): Promise<void> => {
  const small: Record<string, readonly [Uint8Array, string]> = {
    "output.png": [TINY_PNG, "image/png"],
    "output.wav": [TINY_WAV, "audio/wav"],
    "output.mp4": [TINY_MP4, "video/mp4"]
  }
  const file = small[name]
  if (file !== undefined) return streamBytes(res, file[1], file[0], file[0].length)
  if (name === "large.mp4") return streamBytes(res, "video/mp4", TINY_MP4, largeFileBytes)
  sendJson(res, 404, { detail: "Not found." })
  return Promise.resolve()
}
