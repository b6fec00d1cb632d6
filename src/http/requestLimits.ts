import { type HttpServerRequest, HttpServerError } from "@effect/platform"
import { Effect, Stream } from "effect"
import { engineError, type EngineError } from "../domain/errors.js"
import { hasNul, jsonProblem } from "../domain/limits.js"

/** PUT /uploads/{id} streams a file under the limits its signed URL carries, not the JSON cap. */
const isUploadPut = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.method === "PUT" && /^\/uploads\/[^/?]+(?:\?|$)/.test(request.url)

const tooLarge = (maxBytes: number) =>
  engineError("PAYLOAD_TOO_LARGE", `The request body is larger than ${maxBytes} bytes`, { maxBytes })

/**
 * What is refused before any byte of the body is read: a NUL in the path or query (raw or as
 * %00, the only way to percent-encode it), and a Content-Length over the cap.
 */
export const refusedBeforeBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): EngineError | undefined => {
  if (hasNul(request.url) || request.url.includes("%00")) {
    return engineError("VALIDATION_ERROR", "The path or query holds a NUL character (%00)")
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

const decodeError = (request: HttpServerRequest.HttpServerRequest, cause: unknown) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause })

const isAsyncIterable = (u: unknown): u is AsyncIterable<Uint8Array> =>
  typeof u === "object" && u !== null && Symbol.asyncIterator in u

/**
 * The platform's own body as chunks, when it can be read so: a Node IncomingMessage, or a web
 * Request's body (null when it has none). Read directly, a JSON body costs a few promises; through
 * `request.stream` (a Stream over a channel) it cost about half a millisecond of CPU per request.
 */
const chunksOf = (request: HttpServerRequest.HttpServerRequest): AsyncIterable<Uint8Array> | null | undefined => {
  const source = request.source
  if (typeof Request !== "undefined" && source instanceof Request) {
    return source.body === null || isAsyncIterable(source.body) ? source.body : undefined
  }
  return isAsyncIterable(source) ? source : undefined
}

/**
 * Every byte of the body, or a PAYLOAD_TOO_LARGE defect at the first chunk past the cap.
 * Leaving the loop early (over the cap, or interrupted) ends the iteration, which closes the
 * source as the platform's stream does when it is cut off.
 */
const readCapped = (
  request: HttpServerRequest.HttpServerRequest,
  chunks: AsyncIterable<Uint8Array> | null,
  maxBytes: number
): Effect.Effect<Uint8Array, HttpServerError.RequestError> =>
  Effect.tryPromise({
    try: async (signal) => {
      if (chunks === null) return new Uint8Array(0)
      const iterator = chunks[Symbol.asyncIterator]()
      const stop = () => void iterator.return?.()
      signal.addEventListener("abort", stop, { once: true })
      try {
        const parts: Array<Uint8Array> = []
        let seen = 0
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
          seen += next.value.length
          if (seen > maxBytes) {
            stop()
            return undefined
          }
          parts.push(next.value)
        }
        return Buffer.concat(parts, seen)
      } finally {
        signal.removeEventListener("abort", stop)
      }
    },
    catch: (cause) => decodeError(request, cause)
  }).pipe(Effect.flatMap((bytes) => (bytes === undefined ? Effect.die(tooLarge(maxBytes)) : Effect.succeed(bytes))))

/** The same through the request's Stream, for platforms whose request holds no readable source. */
const collectCapped = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Effect.map(Stream.runCollect(cappedStream(request, maxBytes)), (chunks) => Buffer.concat(Array.from(chunks)))

const tooDeepOrNul = (value: unknown) => {
  const problem = jsonProblem(value)
  if (problem === undefined) return Effect.void
  return Effect.die(
    problem._tag === "TooDeep"
      ? engineError("VALIDATION_ERROR", "The request body nests too deeply")
      : engineError("VALIDATION_ERROR", "The request body holds a NUL character", {
        errors: [{ path: problem.path, message: "must not contain the NUL character (\\u0000)" }]
      })
  )
}

// Built only when a route reads one of these, as errors capture a stack trace when made.
const notJson = Effect.dieSync(() => engineError("VALIDATION_ERROR", "The request body must be JSON"))

const LIMITS = Symbol.for("genjobs/http/BodyLimits")

interface Limited extends HttpServerRequest.HttpServerRequest {
  readonly [LIMITS]: {
    readonly request: HttpServerRequest.HttpServerRequest
    readonly maxBytes: number
    /** The one read of the body, made by the first reader and shared by the others. */
    bytes?: Effect.Effect<Uint8Array, HttpServerError.RequestError>
  }
}

const bytesOf = (self: Limited) => {
  const limits = self[LIMITS]
  if (limits.bytes === undefined) {
    const chunks = chunksOf(limits.request)
    limits.bytes = Effect.runSync(Effect.cached(
      chunks === undefined ? collectCapped(limits.request, limits.maxBytes) : readCapped(limits.request, chunks, limits.maxBytes)
    ))
  }
  return limits.bytes
}

const textOf = (self: Limited) => Effect.map(bytesOf(self), (b) => new TextDecoder().decode(b))

/** The readers of a limited request, built on first use: a request whose body is never read pays nothing. */
const limitedReaders: PropertyDescriptorMap = {
  stream: {
    get(this: Limited) {
      return cappedStream(this[LIMITS].request, this[LIMITS].maxBytes)
    }
  },
  text: {
    get(this: Limited) {
      return textOf(this)
    }
  },
  json: {
    get(this: Limited) {
      const request = this[LIMITS].request
      return Effect.flatMap(textOf(this), (t) =>
        Effect.try({ try: () => JSON.parse(t) as unknown, catch: (cause) => decodeError(request, cause) })).pipe(
          Effect.tap(tooDeepOrNul)
        )
    }
  },
  arrayBuffer: {
    get(this: Limited) {
      return Effect.map(bytesOf(this), (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))
    }
  },
  urlParamsBody: { value: notJson },
  multipart: { value: notJson },
  multipartStream: { value: Stream.fromEffect(notJson) }
}

/**
 * The request with every body reader capped at `maxBytes`; JSON is also refused when nested
 * deeper than MAX_JSON_DEPTH or holding a NUL. Refusals are defects carrying an EngineError,
 * as the API builder turns body errors into defects anyway; the error middleware renders them.
 * The engine takes no multipart bodies, so those readers refuse rather than read uncapped.
 */
export const withBodyLimits = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): HttpServerRequest.HttpServerRequest => {
  if (isUploadPut(request)) return request
  const limited = Object.create(request, limitedReaders) as { [LIMITS]: Limited[typeof LIMITS] }
  limited[LIMITS] = { request, maxBytes }
  return limited as unknown as HttpServerRequest.HttpServerRequest
}
