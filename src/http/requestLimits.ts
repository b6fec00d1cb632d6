import { Duration, Effect, Exit, Stream } from "effect"
import { HttpServerError, type HttpServerRequest } from "effect/http"
import { type EngineError, ValidationError } from "../domain/errors.js"
import { hasNul, jsonPointer, type JsonProblem, PayloadTooLarge, RequestTimeout, surveyJson } from "../domain/limits.js"
import { countKeys, findDuplicateKey } from "./duplicateKeys.js"

/** PUT /uploads/{id} streams a file under the limits its signed URL carries, not the JSON cap. */
const isUploadPut = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.method === "PUT" && /^\/uploads\/[^/?]+(?:\?|$)/.test(request.url)

const tooLarge = (maxBytes: number) =>
  new PayloadTooLarge({ message: `The request body is larger than ${maxBytes} bytes`, details: { maxBytes } })

/**
 * What is refused before any byte of the body is read: a NUL in the path or query (raw or as
 * %00, the only way to percent-encode it), and a Content-Length over the cap.
 */
export const refusedBeforeBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): EngineError | undefined => {
  if (hasNul(request.url) || request.url.includes("%00")) {
    return new ValidationError({ message: "The path or query holds a NUL character (%00)" })
  }
  if (isUploadPut(request)) return undefined
  const declared = Number(request.headers["content-length"])
  return declared > maxBytes ? tooLarge(maxBytes) : undefined
}

/** The body as it arrives, dying with PAYLOAD_TOO_LARGE at the first chunk past the cap (so reading stops there). */
const cappedStream = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Stream.suspend(() => {
    let seen = 0
    return Stream.mapEffect(request.stream, (chunk) => {
      seen += chunk.length
      return seen > maxBytes ? Effect.die(tooLarge(maxBytes)) : Effect.succeed(chunk)
    })
  })

/** What a body that does not arrive in time is answered: 408, and the connection closed (see errorMiddleware.ts). */
export const timedOut = (what: string, ms: number) =>
  new RequestTimeout({ message: `${what} within ${ms} ms; the connection is closed`, details: { timeoutMs: ms } })

const decodeError = (request: HttpServerRequest.HttpServerRequest, cause: unknown) =>
  new HttpServerError.HttpServerError({ reason: new HttpServerError.RequestParseError({ request, cause }) })

/** What this reader needs of a Node readable stream (the IncomingMessage of @effect/platform-node's server). */
interface NodeReadable {
  readonly readable: boolean
  on(event: string, listener: (...args: Array<any>) => void): unknown
  off(event: string, listener: (...args: Array<any>) => void): unknown
  destroy(): unknown
}

const isNodeReadable = (u: unknown): u is NodeReadable =>
  typeof u === "object" && u !== null && "readable" in u && typeof (u as NodeReadable).on === "function" &&
  typeof (u as NodeReadable).off === "function" && typeof (u as NodeReadable).destroy === "function"

const EMPTY = new Uint8Array(0)

/** How a body read ended: its bytes, a refusal as a defect (too large, too slow), or the platform's read error. */
type ReadExit = Exit.Exit<Uint8Array, HttpServerError.HttpServerError>

/**
 * A body read over callbacks: started with the function it calls once, with how it ended;
 * answers the function that abandons it. Its time bound is a timer of its own: bounding it as
 * an effect (a race with a sleep) and sharing it (a cached effect) cost four fibers a request.
 */
type BodyRead = (done: (exit: ReadExit) => void) => () => void

const NOTHING_TO_STOP = () => {}

const tooSlow = (timeoutMs: number) => Exit.die(timedOut("The request body did not arrive", timeoutMs))

/**
 * A Node readable's bytes up to the cap, read as @effect/platform-node reads a body as text
 * (listeners, no Stream). Past the cap the source is destroyed, as the platform's stream does.
 * Timed out, it only stops listening: destroying an unfinished IncomingMessage destroys its
 * socket, and a body that timed out must still get its 408. Abandoned (the request
 * interrupted), the source is destroyed.
 */
const readNode = (request: HttpServerRequest.HttpServerRequest, source: NodeReadable, { maxBytes, timeoutMs }: BodyLimits): BodyRead => (done) => {
  if (!source.readable) {
    done(Exit.succeed(EMPTY))
    return NOTHING_TO_STOP
  }
  const parts: Array<Uint8Array> = []
  let seen = 0
  const stop = () => {
    clearTimeout(timer)
    source.off("data", onData)
    source.off("end", onEnd)
    source.off("error", onError)
  }
  const onData = (chunk: Uint8Array) => {
    seen += chunk.length
    if (seen <= maxBytes) return void parts.push(chunk)
    stop()
    source.destroy()
    done(Exit.die(tooLarge(maxBytes)))
  }
  const onEnd = () => {
    stop()
    done(Exit.succeed(Buffer.concat(parts, seen)))
  }
  const onError = (cause: unknown) => {
    stop()
    done(Exit.fail(decodeError(request, cause)))
  }
  const timer = setTimeout(() => {
    stop()
    done(tooSlow(timeoutMs))
  }, timeoutMs)
  source.on("data", onData)
  source.on("end", onEnd)
  source.on("error", onError)
  return () => {
    stop()
    source.destroy()
  }
}

/** A web body's bytes up to the cap, through its reader; past the cap, timed out or abandoned, the stream is cancelled. */
const readWeb = (request: HttpServerRequest.HttpServerRequest, body: ReadableStream<Uint8Array> | null, { maxBytes, timeoutMs }: BodyLimits): BodyRead => (done) => {
  if (body === null) {
    done(Exit.succeed(EMPTY))
    return NOTHING_TO_STOP
  }
  let over = false
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  const cancel = () => void reader?.cancel().catch(() => undefined)
  const finish = (exit: ReadExit) => {
    if (over) return
    over = true
    clearTimeout(timer)
    done(exit)
  }
  const timer = setTimeout(() => {
    cancel()
    finish(tooSlow(timeoutMs))
  }, timeoutMs)
  const read = async () => {
    reader = body.getReader()
    const parts: Array<Uint8Array> = []
    let seen = 0
    for (let next = await reader.read(); !next.done && !over; next = await reader.read()) {
      seen += next.value.length
      if (seen > maxBytes) {
        cancel()
        return finish(Exit.die(tooLarge(maxBytes)))
      }
      parts.push(next.value)
    }
    finish(Exit.succeed(Buffer.concat(parts, seen)))
  }
  read().catch((cause) => finish(Exit.fail(decodeError(request, cause))))
  return () => {
    over = true
    clearTimeout(timer)
    cancel()
  }
}

/**
 * The one read of a body, started by its first reader and answered to every reader, then to
 * any later one. Abandoned once every reader waiting for it left before it ended (a reader
 * after that starts it again, as a cached effect would).
 */
const readOnce = (start: BodyRead): Effect.Effect<Uint8Array, HttpServerError.HttpServerError> => {
  let result: ReadExit | undefined
  let abandon: (() => void) | undefined
  const waiting = new Set<(exit: ReadExit) => void>()
  return Effect.callback((resume) => {
    if (result !== undefined) return resume(result)
    waiting.add(resume)
    abandon ??= start((exit) => {
      result = exit
      for (const waiter of waiting) waiter(exit)
      waiting.clear()
    })
    return Effect.sync(() => {
      waiting.delete(resume)
      if (waiting.size > 0 || result !== undefined || abandon === undefined) return
      const stop = abandon
      abandon = undefined
      stop()
    })
  })
}

/**
 * Every byte of the body, or a PAYLOAD_TOO_LARGE defect at the first chunk past the cap, read
 * once and shared by every reader. Read from the platform's source when it is a Node
 * IncomingMessage or a web Request: through `request.stream` (a Stream over a channel) a JSON
 * body cost about half a millisecond of CPU.
 */
const readCapped = (request: HttpServerRequest.HttpServerRequest, limits: BodyLimits): Effect.Effect<Uint8Array, HttpServerError.HttpServerError> => {
  const source = request.source
  if (typeof Request !== "undefined" && source instanceof Request) return readOnce(readWeb(request, source.body, limits))
  if (isNodeReadable(source)) return readOnce(readNode(request, source, limits))
  return Effect.runSync(Effect.cached(bounded(collectCapped(request, limits.maxBytes), limits)))
}

/** A read that has not ended `timeoutMs` after it began dies with REQUEST_TIMEOUT, the read interrupted. */
const bounded = <A>(read: Effect.Effect<A, HttpServerError.HttpServerError>, { timeoutMs }: BodyLimits) =>
  Effect.timeoutOrElse(read, {
    duration: Duration.millis(timeoutMs),
    orElse: () => Effect.die(timedOut("The request body did not arrive", timeoutMs))
  })

/** The same through the request's Stream, for platforms whose request holds no readable source. */
const collectCapped = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): Effect.Effect<Uint8Array, HttpServerError.HttpServerError> =>
  Effect.map(Stream.runCollect(cappedStream(request, maxBytes)), (chunks) => Buffer.concat(chunks))

const tooDeepOrNul = (problem: JsonProblem) =>
  problem._tag === "TooDeep"
    ? new ValidationError({ message: "The request body nests too deeply" })
    : new ValidationError({ message: "The request body holds a NUL character", details: {
      errors: [{ path: problem.path, message: "must not contain the NUL character (\\u0000)" }]
    } })

/** A key named twice in one object, named as unknown fields are (a dotted path, and a JSON pointer in `errors`). */
const repeatedKey = (text: string) => {
  const duplicate = findDuplicateKey(text)
  if (duplicate === undefined) return undefined
  const field = duplicate.path.join(".")
  return new ValidationError({ message: `The request body names the key "${duplicate.key}" twice in one object (${field})`, details: {
    duplicate: field,
    errors: [{ path: jsonPointer(duplicate.path), message: "is named more than once in its object; each key may appear once" }]
  } })
}

/**
 * The body's JSON, or a refusal: not JSON, too deep, a NUL, or a repeated key, which JSON.parse
 * would silently resolve to its last value while another reader of the same bytes takes the
 * first. A repetition shows as fewer members in the value than keys in the text; only then are
 * the keys compared, to name the repeated one. Refusals are defects, as body errors are to the
 * API builder.
 */
const parseJson = (text: string) => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Effect.die(new ValidationError({ message: "The request body is not valid JSON" }))
  }
  const { members, problem } = surveyJson(value)
  const refused = problem !== undefined
    ? tooDeepOrNul(problem)
    : members === countKeys(text)
    ? undefined
    : repeatedKey(text)
  return refused === undefined ? Effect.succeed(value) : Effect.die(refused)
}

// Built only when a route reads one of these, as errors capture a stack trace when made.
const notJson = Effect.suspend(() => Effect.die(new ValidationError({ message: "The request body must be JSON" })))
const notJsonStream = Stream.fromEffect(notJson)

/**
 * One decoder for every body: a whole-buffer decode (no `stream` option) keeps no state between
 * calls, and making a decoder per request cost more than the decode of a small body.
 */
const utf8 = new TextDecoder("utf-8", { fatal: true })

/** JSON's text, refused when it is not UTF-8: a lenient decode would store U+FFFD in its place. */
const jsonTextOf = (bytes: Effect.Effect<Uint8Array, HttpServerError.HttpServerError>) =>
  Effect.flatMap(bytes, (b) =>
    Effect.try({
      try: () => utf8.decode(b),
      catch: () => new ValidationError({ message: "The request body is not valid UTF-8" })
    }).pipe(Effect.orDie))

export interface BodyLimits {
  /** The largest body read (upload PUTs aside); larger is 413. */
  readonly maxBytes: number
  /** The longest a body (upload PUTs aside) may take to arrive, from its first read; then 408. */
  readonly timeoutMs: number
  /** The longest an upload PUT's body may go without a byte; then 408. */
  readonly uploadIdleMs: number
}

/**
 * An upload PUT's body stream, dying with REQUEST_TIMEOUT when no bytes came for `uploadIdleMs`:
 * a slow link sending 100 MiB is legitimate, so its total time is not bounded, only its silences.
 */
const withUploadIdleTimeout = (request: HttpServerRequest.HttpServerRequest, { uploadIdleMs }: BodyLimits) =>
  new Proxy(request, {
    get: (target, key, receiver) =>
      key === "stream"
        ? Stream.timeoutOrElse(target.stream, {
          duration: Duration.millis(uploadIdleMs),
          orElse: () => Stream.die(timedOut("The upload sent no bytes", uploadIdleMs))
        })
        : Reflect.get(target, key, receiver)
  })

/**
 * The request with every body reader capped at `maxBytes` and bounded by `timeoutMs`; JSON is also refused when nested
 * deeper than MAX_JSON_DEPTH, holding a NUL or naming a key twice in one object. Refusals are defects carrying an EngineError,
 * as the API builder turns body errors into defects anyway; the error middleware answers them, by type.
 * The engine takes no multipart bodies, so those readers refuse rather than read uncapped.
 * A Proxy rather than an object made with property descriptors: those cost several
 * microseconds a request to make, and every read through them is slow.
 */
export const withBodyLimits = (
  request: HttpServerRequest.HttpServerRequest,
  limits: BodyLimits
): HttpServerRequest.HttpServerRequest => {
  if (isUploadPut(request)) return withUploadIdleTimeout(request, limits)
  const { maxBytes } = limits
  /** The one read of the body, made by the first reader and shared by the others. */
  let read: Effect.Effect<Uint8Array, HttpServerError.HttpServerError> | undefined
  const bytes = () => (read ??= readCapped(request, limits))
  return new Proxy(request, {
    get: (target, key, receiver) => {
      switch (key) {
        case "stream":
          return Stream.interruptWhen(
            cappedStream(target, maxBytes),
            Effect.andThen(Effect.sleep(Duration.millis(limits.timeoutMs)), Effect.die(timedOut("The request body did not arrive", limits.timeoutMs)))
          )
        case "text":
          // HttpApi reads a JSON body as text and parses it itself: the text is checked as JSON is.
          return Effect.flatMap(jsonTextOf(bytes()), (t) => Effect.as(parseJson(t), t))
        case "json":
          return Effect.flatMap(jsonTextOf(bytes()), parseJson)
        case "arrayBuffer":
          return Effect.map(bytes(), (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))
        case "urlParamsBody":
        case "multipart":
          return notJson
        case "multipartStream":
          return notJsonStream
        default:
          // The receiver stays the proxy, so the platform's own getters (unsafeJson...) read through these readers too.
          return Reflect.get(target, key, receiver)
      }
    }
  })
}
