import { Clock, Effect, Option, Result, Schema } from "effect"
import { type HttpClientRequest, Url } from "effect/http"
import { Agent, type Dispatcher, request as undiciRequest } from "undici"
import type { ProviderFacts } from "../../src/domain/failureTaxonomy.js"
import { parseRetryAfterMs } from "../../src/domain/retryAfter.js"
import { type ProviderError, ProviderRejected, ProviderUnreachable } from "../../src/ports/Provider.js"

/** Connections a provider keeps to each of its API's hosts when its options set none (`maxConnections`). */
export const DEFAULT_MAX_CONNECTIONS = 64

/**
 * An idle keep-alive connection is closed after this long (sooner when the server announces a
 * shorter keep-alive: undici takes 2 s off the announcement). Below the 5 s idle timeout of
 * Node, uvicorn and Apache, and far below load balancers' (60 s and more), so the pool is the one
 * to close an idle connection: a server that closes it first may do so while a request is on its
 * way, and a start lost that way cannot be told from one the provider took (decisions.md, "A
 * stale pooled connection and a start"). Not 1 s: at 10,000 generations in flight the pool's 64
 * connections per host were closed and opened again all the time (RSS 606 MiB against 420-430).
 */
export const IDLE_CONNECTION_MS = 4_000

/**
 * A provider's own connection pool: keep-alive connections to each host of its API, at most
 * `maxConnections` to each, so that any number of generations in flight holds a bounded number
 * of sockets (file handles). A request beyond the cap waits in the pool for a free connection;
 * its timeout (exchange) starts only once it is written, so the wait never counts against it.
 */
export const connectionPool = (maxConnections: number = DEFAULT_MAX_CONNECTIONS): Dispatcher =>
  new Agent({ connections: maxConnections, keepAliveTimeout: IDLE_CONNECTION_MS, keepAliveMaxTimeout: IDLE_CONNECTION_MS })

/** The pool of an API that brings none of its own. */
let sharedPool: Dispatcher | undefined

/** How one provider's API answers: what its errors say and which of them are worth asking again. Each adapter's api.ts. */
export interface ProviderApi {
  /** The provider's name, as error messages say it. */
  readonly name: string
  /** Credentials no message may carry, even when the provider echoes them back. */
  readonly secrets: ReadonlyArray<string>
  /** The provider's own message out of a parsed error body. */
  readonly errorMessage: (body: unknown) => string | undefined
  /**
   * What an error answer says beside its status: the provider's own error code or category and
   * whether it flags a content-policy refusal, read from its documented body and headers. The
   * engine decides the failure's type from these (classifyFailure); absent, the status says all.
   */
  readonly errorFacts?: (body: unknown, headers: Readonly<Record<string, string>>) => ProviderFacts
  readonly isRetryable: (status: number, body: unknown) => boolean
  /** When to ask again, from the headers of a refused request. */
  readonly retryAfterMs: (headers: Readonly<Record<string, string>>, nowMs: number) => number | undefined
  /**
   * Error statuses of a start that do not prove nothing started (a gateway that may have passed
   * the request on): ProviderUnreachable, so the engine looks for the generation instead of
   * starting it again. Absent: every error status of a start means nothing started.
   */
  readonly startOutcomeUnknown?: (status: number) => boolean
  /** The provider's connection pool (connectionPool); absent, a pool shared by every such API. */
  readonly connections?: Dispatcher | undefined
}

/** A provider's answer read whole: API answers are small JSON documents (outputs come by URL or stream). */
export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

export { secretValue } from "../../src/domain/secret.js"

/** An API root as given, without the trailing slashes that would double in paths. */
export const apiRoot = (baseUrl: string): string => baseUrl.replace(/\/+$/, "")

/** Long provider messages (a validation dump, an HTML error page) are cut: they end up in a job's error. */
const MESSAGE_LIMIT = 500

/** Replaces every credential in a message: providers have been known to quote a key they refused. */
export const redact = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.reduce((out, secret) => (secret.length === 0 ? out : out.split(secret).join("[redacted]")), text)

/** Redacted before it is cut, so that no cut leaves part of a secret behind. */
export const shown = (api: ProviderApi, text: string): string => {
  const clean = redact(text, api.secrets)
  return clean.length > MESSAGE_LIMIT ? `${clean.slice(0, MESSAGE_LIMIT)}…` : clean
}

/** The answer's JSON, or undefined when it is not JSON. */
export const jsonOf = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export const isSuccess = (answer: Answer): boolean => answer.status >= 200 && answer.status <= 299

/** Retry-After, when the provider sends it, says when to ask again. */
export const retryAfterHeader = (headers: Readonly<Record<string, string>>, nowMs: number): number | undefined =>
  parseRetryAfterMs(headers["retry-after"], nowMs)

/**
 * HTTP's own reading of an error status, for providers that document nothing more: 408, 429 and
 * 5xx are worth asking again (after Retry-After); other 4xx (input, payment, credentials) are
 * final; a 502 or 504 to a start comes from a gateway that may have passed the request on.
 */
export const HTTP_RETRY_RULES: Pick<ProviderApi, "isRetryable" | "retryAfterMs" | "startOutcomeUnknown"> = {
  isRetryable: (status) => status === 408 || status === 429 || status >= 500,
  retryAfterMs: retryAfterHeader,
  startOutcomeUnknown: (status) => status === 502 || status === 504
}

/** Header names as sent are any case; callbacks are checked against lower-case names. */
export const lowerCaseKeys = (headers: Readonly<Record<string, string>>): Readonly<Record<string, string>> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))

/**
 * Error codes Node and undici raise only while connecting, before a request is written: the
 * connection refused or never made (no route, no address, undici's connect timeout), the name
 * not resolved, and TLS handshake failures (certificate checks, a peer that does not speak TLS).
 * A reset or a timeout of an open connection is not here: the request may have arrived.
 */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
  "EAI_NONAME",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "HOSTNAME_MISMATCH",
  "INVALID_CA",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_TLS_HANDSHAKE_TIMEOUT",
  "ERR_SSL_WRONG_VERSION_NUMBER"
])

const codeOf = (error: unknown): string | undefined => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  return typeof code === "string" ? code : undefined
}

/** The socket's errors behind a failed request: the error itself, or the one it wraps when it has no code. */
const socketErrorsOf = (error: unknown): ReadonlyArray<unknown> => {
  const failure = codeOf(error) === undefined && error instanceof Error && error.cause !== undefined ? error.cause : error
  // Trying each address of a name (happy eyeballs) fails with every address's error.
  return failure instanceof AggregateError && failure.errors.length > 0 ? failure.errors : [failure]
}

/** Whether a failed request provably never wrote its request: every address it tried failed while connecting. */
export const neverSent = (error: unknown): boolean =>
  socketErrorsOf(error).every((failure) => NOT_SENT_CODES.has(codeOf(failure) ?? ""))

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const causeText = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const code = codeOf(socketErrorsOf(error)[0])
  return code === undefined || error.message.includes(code) ? error.message : `${error.message} (${code})`
}

export const unreachable = (api: ProviderApi, message: string, notSent = false, timedOut = false) =>
  new ProviderUnreachable({ message: redact(`${api.name} ${message}`, api.secrets), notSent, ...(timedOut ? { timedOut } : {}) })

/** The facts of an error answer, without the keys it does not have. */
export const errorFactsOf = (api: ProviderApi, answer: Answer): ProviderFacts => {
  const facts = api.errorFacts?.(jsonOf(answer.text), answer.headers) ?? {}
  return {
    ...(facts.providerCode === undefined || facts.providerCode === "" ? {} : { providerCode: facts.providerCode }),
    ...(facts.contentBlocked === true ? { contentBlocked: true } : {})
  }
}

/** The provider's message in an error answer: its documented error body, else the text as it came. */
export const saidIn = (api: ProviderApi, answer: Answer): string | undefined => {
  const text = answer.text.trim()
  return api.errorMessage(jsonOf(answer.text)) ?? (text === "" ? undefined : text)
}

/**
 * Which error an unsuccessful answer is: retryable or final by the provider's rules (after
 * Retry-After when it gives one), or, for a start whose outcome the status leaves open,
 * ProviderUnreachable.
 */
export const rejection = (api: ProviderApi, answer: Answer, options: { readonly isStart?: boolean } = {}) =>
  Effect.gen(function*() {
    const said = saidIn(api, answer)
    const message = `${api.name} answered HTTP ${answer.status}${said === undefined ? "" : `: ${shown(api, said)}`}`
    if (options.isStart === true && api.startOutcomeUnknown?.(answer.status) === true) {
      // A gateway's 504 is its timeout: the provider did not answer it in time.
      return yield* new ProviderUnreachable({ message, ...(answer.status === 504 ? { timedOut: true } : {}) })
    }
    const retryable = api.isRetryable(answer.status, jsonOf(answer.text))
    const retryAfterMs = retryable ? api.retryAfterMs(answer.headers, yield* Clock.currentTimeMillis) : undefined
    return yield* new ProviderRejected({
      message,
      retryable,
      httpStatus: answer.status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...errorFactsOf(api, answer)
    })
  })

/** undici's codes for a request that got no answer, or no whole answer, in its time. */
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"])

const headersOf = (headers: Record<string, string | Array<string> | undefined>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/** The request's body as undici sends it: provider API requests carry whole documents, or nothing. */
const bodyOf = (body: HttpClientRequest.HttpClientRequest["body"]): string | Uint8Array | null | undefined => {
  switch (body._tag) {
    case "Empty":
      return null
    case "Uint8Array":
      return body.body
    case "Raw":
      return typeof body.body === "string" || body.body instanceof Uint8Array ? body.body : undefined
    default:
      return undefined
  }
}

/**
 * Resolves in the event loop's check phase. A start waits for it before it is handed to the
 * pool: a pooled connection the server closed while the process was busy has its close waiting
 * unread in the socket, and undici's own check before it reuses an idle connection yields only
 * to the next check phase, which comes before any poll when the start was sent from a poll
 * callback (a store's answer). Sent from the check phase, that check runs a turn later, after
 * the loop polled the sockets: undici has seen the close and sends the start on a new connection.
 */
const checkPhase = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Sends one request on the provider's pool and reads its answer whole, whatever its status.
 * `timeoutMs` counts from when the request was written, not from when it was asked for: a
 * request waiting for a free connection is not timed, and a process that was busy for a while
 * reads the answers that came meanwhile before it times anything out (undici's timers count
 * the event loop's turns, not the wall clock). No answer, or no whole answer, within
 * `timeoutMs` of writing, a refused or reset connection, a body cut short: ProviderUnreachable,
 * with `notSent` when the connection failed before the request was written (neverSent).
 * A start (`isStart`) is handed to the pool from the event loop's check phase (checkPhase).
 */
export const exchange = (
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  timeoutMs: number,
  { isStart = false }: Pick<SendOptions, "isStart"> = {}
): Effect.Effect<Answer, ProviderUnreachable> => {
  const url = Url.make(request.url, request.urlParams, Option.getOrUndefined(request.hash))
  if (Result.isFailure(url)) return Effect.fail(unreachable(api, `has no valid address: ${messageOf(url.failure.cause)}`, true))
  const body = bodyOf(request.body)
  if (body === undefined) return Effect.die(new Error(`a ${request.body._tag} body is not sent to a provider's API`))
  // Whether the answer's head came, per run: a retry runs this Effect again.
  return Effect.suspend(() => {
    let answered = false
    return Effect.tryPromise({
      try: async (signal) => {
        if (isStart) await checkPhase()
        const response = await undiciRequest(url.success, {
          dispatcher: api.connections ?? (sharedPool ??= connectionPool()),
          method: request.method,
          headers: request.headers,
          body,
          signal,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs
        })
        answered = true
        return { status: response.statusCode, headers: headersOf(response.headers), text: await response.body.text() }
      },
      catch: (error) =>
        TIMEOUT_CODES.has(codeOf(error) ?? "")
          ? unreachable(api, `did not answer within ${timeoutMs} ms`, false, true)
          : answered
          ? unreachable(api, `broke off its answer: ${causeText(error)}`)
          : unreachable(api, `could not be reached: ${causeText(error)}`, neverSent(error))
    })
  })
}

type JsonDecoder<A> = (text: string) => Effect.Effect<A, Schema.SchemaError>

/**
 * Each answer schema's JSON decoder, built once: `Schema.fromJsonString` makes a new schema (and
 * so a new parser) on every call, which at thousands of polls a second was a visible share of the
 * process's CPU.
 */
const jsonDecoders = new WeakMap<Schema.Top, JsonDecoder<unknown>>()

const jsonDecoderOf = <A>(schema: Schema.Decoder<A>): JsonDecoder<A> => {
  const known = jsonDecoders.get(schema)
  if (known !== undefined) return known as JsonDecoder<A>
  const decoder: JsonDecoder<A> = Schema.decodeUnknownEffect(Schema.fromJsonString(schema))
  jsonDecoders.set(schema, decoder)
  return decoder
}

/**
 * A 2xx answer decoded with the provider's documented shape. An answer that does not match says
 * nothing certain about what happened at the provider: ProviderUnreachable, so a start is looked
 * for (recover) rather than repeated, and a poll is asked again.
 */
export const decodeAnswer = <A>(api: ProviderApi, schema: Schema.Decoder<A>, answer: Answer): Effect.Effect<A, ProviderUnreachable> =>
  jsonDecoderOf(schema)(answer.text).pipe(
    Effect.mapError((error) =>
      unreachable(
        api,
        `answered HTTP ${answer.status} with a body it does not document: ${shown(api, error.message)}`
      )
    )
  )

export interface SendOptions {
  readonly timeoutMs: number
  /** The request asks the provider to start a generation (see ProviderApi.startOutcomeUnknown). */
  readonly isStart?: boolean
}

/** Sends one request; a 2xx answer as it came, an error status as the provider's rejection. */
export const send = (
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  options: SendOptions
): Effect.Effect<Answer, ProviderError> =>
  Effect.flatMap(exchange(api, request, options.timeoutMs, options), (answer) =>
    isSuccess(answer) ? Effect.succeed(answer) : rejection(api, answer, options))

/**
 * Sends one request and decodes its 2xx JSON answer with `schema`. An error status is a
 * ProviderRejected with the provider's message; no answer in time, a broken connection or a body
 * that does not decode is a ProviderUnreachable.
 */
export const sendJson = <A>(
  api: ProviderApi,
  request: HttpClientRequest.HttpClientRequest,
  schema: Schema.Decoder<A>,
  options: SendOptions
): Effect.Effect<A, ProviderError> => Effect.flatMap(send(api, request, options), (answer) => decodeAnswer(api, schema, answer))

/** Best-effort requests (a cancel): an answer with this status means there is nothing left to stop. */
export const ignoringStatuses = (statuses: ReadonlyArray<number>) => <A>(effect: Effect.Effect<A, ProviderError>) =>
  effect.pipe(
    Effect.asVoid,
    Effect.catchIf(
      (error) => error._tag === "ProviderRejected" && error.httpStatus !== undefined && statuses.includes(error.httpStatus),
      () => Effect.void
    )
  )

