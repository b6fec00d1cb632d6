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
  const stream = cappedStream(request, maxBytes)
  const bytes = Effect.runSync(Effect.cached(
    Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Array.from(chunks)))
  ))
  const text = Effect.map(bytes, (b) => new TextDecoder().decode(b))
  const json = Effect.flatMap(text, (t) =>
    Effect.try({ try: () => JSON.parse(t) as unknown, catch: (cause) => decodeError(request, cause) })).pipe(
      Effect.tap((value) => {
        const problem = jsonProblem(value)
        if (problem === undefined) return Effect.void
        return Effect.die(
          problem._tag === "TooDeep"
            ? engineError("VALIDATION_ERROR", "The request body nests too deeply")
            : engineError("VALIDATION_ERROR", "The request body holds a NUL character", {
              errors: [{ path: problem.path, message: "must not contain the NUL character (\\u0000)" }]
            })
        )
      })
    )
  // Built only when a route reads one of these, as errors capture a stack trace when made.
  const notJson = Effect.dieSync(() => engineError("VALIDATION_ERROR", "The request body must be JSON"))
  return Object.create(request, {
    stream: { value: stream },
    text: { value: text },
    json: { value: json },
    arrayBuffer: { value: Effect.map(bytes, (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)) },
    urlParamsBody: { value: notJson },
    multipart: { value: notJson },
    multipartStream: { value: Stream.fromEffect(notJson) }
  }) as HttpServerRequest.HttpServerRequest
}
