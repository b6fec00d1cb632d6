import { FetchHttpClient, HttpClient, type HttpClientRequest } from "@effect/platform"
import { Clock, Effect, ParseResult, Schema } from "effect"
import { type ProviderError, ProviderRejected, ProviderUnreachable } from "../../../src/ports/Provider.js"

/** Node's fetch as an Effect HttpClient, built once: a provider made with it asks nothing of its caller's context. */
export const fetchHttpClient: HttpClient.HttpClient = Effect.runSync(HttpClient.HttpClient.pipe(Effect.provide(FetchHttpClient.layer)))

/** How one provider's API answers: what its errors say and which of them are worth asking again. */
export interface ProviderApi {
  /** The provider's name, as error messages say it. */
  readonly name: string
  /** Credentials no message may carry, even when the provider echoes them back. */
  readonly secrets: ReadonlyArray<string>
  /** The provider's own message out of a parsed error body. */
  readonly errorMessage: (body: unknown) => string | undefined
  readonly isRetryable: (status: number, body: unknown) => boolean
  /** When to ask again, from the headers of a refused request. */
  readonly retryAfterMs: (headers: Readonly<Record<string, string>>, nowMs: number) => number | undefined
}

const MESSAGE_LIMIT = 500

/** Replaces every credential in a message: providers have been known to quote a key they refused. */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((out, secret) => (secret.length === 0 ? out : out.split(secret).join("[redacted]")), text)

/** Redacted before it is cut, so that no cut leaves part of a secret behind. */
const shown = (api: ProviderApi, text: string): string => {
  const clean = redact(text, api.secrets)
  return clean.length > MESSAGE_LIMIT ? `${clean.slice(0, MESSAGE_LIMIT)}…` : clean
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Retry-After as RFC 9110 gives it: delay seconds or an HTTP date. */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  const trimmed = value?.trim()
  if (trimmed === undefined || trimmed === "") return undefined
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}

const causeText = (cause: unknown): string => {
  if (!(cause instanceof Error)) return String(cause)
  const inner = (cause as { cause?: unknown }).cause
  const code = inner instanceof Error ? ((inner as { code?: string }).code ?? inner.message) : undefined
  return code === undefined ? cause.message : `${cause.message} (${code})`
}

const unreachable = (api: ProviderApi, message: string) =>
  new ProviderUnreachable({ message: redact(`${api.name} ${message}`, api.secrets) })

const rejection = (api: ProviderApi, status: number, headers: Readonly<Record<string, string>>, text: string) =>
  Effect.gen(function*() {
    const body = parseJson(text)
    const said = api.errorMessage(body) ?? (text.trim() === "" ? undefined : text.trim())
    const retryable = api.isRetryable(status, body)
    const retryAfterMs = retryable ? api.retryAfterMs(headers, yield* Clock.currentTimeMillis) : undefined
    return yield* new ProviderRejected({
      message: `${api.name} answered HTTP ${status}${said === undefined ? "" : `: ${shown(api, said)}`}`,
      retryable,
      httpStatus: status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs })
    })
  })

const exchange = <A>(
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  timeoutMs: number,
  decode: (text: string, status: number) => Effect.Effect<A, ProviderError>
): Effect.Effect<A, ProviderError> =>
  fetchHttpClient.execute(request).pipe(
    Effect.flatMap((response) =>
      Effect.flatMap(response.text, (text) =>
        response.status >= 200 && response.status <= 299
          ? decode(text, response.status)
          : rejection(api, response.status, response.headers, text)
      )
    ),
    Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => unreachable(api, `did not answer within ${timeoutMs} ms`) }),
    Effect.catchTags({
      RequestError: (error) => Effect.fail(unreachable(api, `could not be reached: ${causeText(error.cause)}`)),
      ResponseError: (error) => Effect.fail(unreachable(api, `broke off its answer: ${causeText(error.cause)}`))
    })
  )

/**
 * Sends one request and decodes its 2xx JSON answer with `schema`. An error status is a
 * ProviderRejected with the provider's message; no answer in time, a broken connection or a body
 * that does not decode is a ProviderUnreachable.
 */
export const sendJson = <A, I>(
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  schema: Schema.Schema<A, I>,
  timeoutMs: number
): Effect.Effect<A, ProviderError> =>
  exchange(api, request, timeoutMs, (text, status) =>
    Schema.decodeUnknown(Schema.parseJson(schema))(text).pipe(
      Effect.mapError((error) =>
        unreachable(api, `answered HTTP ${status} with a body it does not document: ${shown(api, ParseResult.TreeFormatter.formatErrorSync(error))}`)
      )
    ))

/** The same for a request whose 2xx answer carries nothing the caller needs. */
export const sendIgnoringBody = (
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  timeoutMs: number
): Effect.Effect<void, ProviderError> => exchange(api, request, timeoutMs, () => Effect.void)
