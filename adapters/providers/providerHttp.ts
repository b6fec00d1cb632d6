import { FetchHttpClient, HttpClient, type HttpClientRequest } from "@effect/platform"
import { Clock, Effect, Schema } from "effect"
import { ProviderRejected, ProviderUnreachable } from "../../src/ports/Provider.js"

/** One HttpClient over the platform's fetch for every adapter call: the providers need nothing provided. */
export const fetchClient: HttpClient.HttpClient = Effect.runSync(Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer))

/** A provider's answer read whole: API answers are small JSON documents (outputs come by URL). */
export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

/**
 * Sends a request and reads its answer. No answer within `timeoutMs`, a refused or reset
 * connection, a body cut short: ProviderUnreachable, named by `what` only (the request's
 * headers carry the credential, so neither they nor the transport's own message go in it).
 */
export const send = (
  request: HttpClientRequest.HttpClientRequest,
  options: { readonly what: string; readonly timeoutMs: number }
): Effect.Effect<Answer, ProviderUnreachable> =>
  fetchClient.execute(request).pipe(
    Effect.flatMap((response) =>
      Effect.map(response.text, (text): Answer => ({ status: response.status, headers: response.headers, text }))
    ),
    Effect.timeoutFail({
      duration: options.timeoutMs,
      onTimeout: () => new ProviderUnreachable({ message: `${options.what}: no answer within ${options.timeoutMs} ms` })
    }),
    Effect.catchTag("RequestError", "ResponseError", (error) =>
      Effect.fail(new ProviderUnreachable({ message: `${options.what}: ${error.reason === "Transport" ? "the connection failed" : "the answer could not be read"}` })))
  )

export const isSuccess = (answer: Answer): boolean => answer.status >= 200 && answer.status < 300

/** The answer's JSON, or undefined when it is not JSON. */
export const jsonOf = (answer: Answer): unknown => {
  try {
    return JSON.parse(answer.text)
  } catch {
    return undefined
  }
}

/**
 * A 2xx answer decoded with the provider's documented shape. An answer that does not match
 * says nothing certain about what happened at the provider: ProviderUnreachable, so a start
 * is looked for (recover) rather than repeated, and a poll is asked again.
 */
export const decodeAnswer = <A, I>(schema: Schema.Schema<A, I>, answer: Answer, what: string): Effect.Effect<A, ProviderUnreachable> =>
  Schema.decodeUnknown(schema)(jsonOf(answer)).pipe(
    Effect.mapError(() => new ProviderUnreachable({ message: `${what}: the answer (HTTP ${answer.status}) is not in the documented shape` }))
  )

/** Retry-After as delta-seconds or an HTTP date, in milliseconds from `now`; undefined when absent or unreadable. */
export const retryAfterMs = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Long provider messages (a validation dump, an HTML error page) are cut: they end up in a job's error. */
export const MAX_MESSAGE_LENGTH = 500

export const clip = (message: string): string =>
  message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : message

/**
 * Which error an unsuccessful answer is. 429, 408 and 5xx are worth asking again (429 after
 * Retry-After); other 4xx (invalid input, payment, credentials) are final. For a start, a 502
 * or 504 comes from a gateway that may have passed the request on: the generation may have
 * started, so it is ProviderUnreachable (look for it, never start again) rather than a rejection.
 */
export const failureOf = (
  answer: Answer,
  options: { readonly what: string; readonly message: string | undefined; readonly isStart: boolean }
): Effect.Effect<never, ProviderRejected | ProviderUnreachable> =>
  Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<never, ProviderRejected | ProviderUnreachable> => {
    const { status } = answer
    const message = clip(`${options.what}: HTTP ${status}${options.message === undefined ? "" : `: ${options.message}`}`)
    if (options.isStart && (status === 502 || status === 504)) return Effect.fail(new ProviderUnreachable({ message }))
    const retryable = status === 429 || status === 408 || status >= 500
    const after = retryable ? retryAfterMs(answer.headers["retry-after"], now) : undefined
    return Effect.fail(
      new ProviderRejected({ message, retryable, httpStatus: status, ...(after === undefined ? {} : { retryAfterMs: after }) })
    )
  })

/** Header names as sent are any case; callbacks are checked against lower-case names. */
export const lowerCaseKeys = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))
