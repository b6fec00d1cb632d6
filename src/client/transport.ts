import { parseRetryAfterMs } from "../domain/retryAfter.js"
import { GenjobsError } from "./errors.js"

/** What the client calls to send a request: `fetch` itself, or a stand-in (a web handler, a test double). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>

export interface TransportOptions {
  /** The engine's URL with its base path, e.g. `https://api.example.com` or `http://localhost:8080/api/genjobs`. */
  readonly baseUrl: string
  readonly apiKey: string
  /** Default: the global fetch. */
  readonly fetch?: FetchLike | undefined
  /** Retries after a network error or a 503, for requests safe to repeat. Default 2. */
  readonly retries?: number | undefined
  /** Per attempt, until the whole answer is read. Default 30,000 ms. */
  readonly timeoutMs?: number | undefined
}

export interface RequestSpec {
  readonly method: "GET" | "POST" | "PUT"
  /** A path under baseUrl, or a whole URL (an upload URL). */
  readonly path: string
  readonly query?: Readonly<Record<string, string | number | undefined>> | undefined
  readonly json?: unknown
  readonly body?: BodyInit | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Safe to send again: a GET, a cancel, a submit with an Idempotency-Key. */
  readonly retry: boolean
  /** Whether to send the API key; upload URLs are capabilities and may be another host's (S3). */
  readonly auth?: boolean | undefined
  readonly signal?: AbortSignal | undefined
  /** Overrides the client's timeout; 0 for none (an event stream lasts as long as the job). */
  readonly timeoutMs?: number | undefined
}

export interface Transport {
  readonly retries: number
  readonly timeoutMs: number
  /** Sends with retries; a refusal rejects with GenjobsError; `read` runs within the attempt's timeout. */
  readonly request: <A>(spec: RequestSpec, read: (response: Response) => Promise<A>) => Promise<A>
  readonly json: <A>(spec: RequestSpec) => Promise<A>
}

const MAX_RETRY_AFTER_MS = 60_000

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

/** 500 ms, 1 s, 2 s, ... at most 8 s between attempts that got no answer. */
const backoffMs = (attempt: number) => Math.min(500 * 2 ** attempt, 8_000)

/** Retry-After in seconds or as an HTTP date; capped so a wrong header cannot stall the caller. */
const retryAfterMs = (response: Response): number | undefined => {
  const ms = parseRetryAfterMs(response.headers.get("retry-after"), Date.now())
  return ms === undefined ? undefined : Math.min(ms, MAX_RETRY_AFTER_MS)
}

/** The error envelope when the answer has one; otherwise what the status says. */
const errorFrom = async (response: Response): Promise<GenjobsError> => {
  const text = await response.text().catch(() => "")
  let envelope: any
  try {
    envelope = JSON.parse(text)
  } catch {
    envelope = undefined
  }
  const requestId = envelope?.requestId ?? response.headers.get("x-request-id") ?? undefined
  if (typeof envelope?.error?.code === "string") {
    return new GenjobsError({
      code: envelope.error.code,
      status: response.status,
      message: String(envelope.error.message ?? envelope.error.code),
      details: envelope.error.details,
      requestId
    })
  }
  return new GenjobsError({
    code: `HTTP_${response.status}`,
    status: response.status,
    message: `${response.status} ${response.statusText}`.trim() + (text === "" ? "" : `: ${text.slice(0, 200)}`),
    requestId
  })
}

export const makeTransport = (options: TransportOptions): Transport => {
  const baseUrl = options.baseUrl.replace(/\/+$/, "")
  // Called through a closure: browsers refuse `fetch` called as a method of another object.
  const send: FetchLike = options.fetch ?? ((url, init) => globalThis.fetch(url, init))
  const retries = options.retries ?? 2
  const timeoutMs = options.timeoutMs ?? 30_000

  const urlOf = (spec: RequestSpec) => {
    const url = new URL(/^https?:\/\//.test(spec.path) ? spec.path : `${baseUrl}${spec.path}`)
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value))
    }
    return url.toString()
  }

  const headersOf = (spec: RequestSpec): Record<string, string> => ({
    ...(spec.auth === false ? {} : { authorization: `Bearer ${options.apiKey}` }),
    ...(spec.json === undefined ? {} : { "content-type": "application/json" }),
    ...spec.headers
  })

  /** One attempt: the answer and `read` of it, under the attempt's timeout and the caller's signal. */
  const attempt = async <A>(spec: RequestSpec, read: (response: Response) => Promise<A>): Promise<A | Response> => {
    const limit = spec.timeoutMs ?? timeoutMs
    const controller = new AbortController()
    const onAbort = () => controller.abort(spec.signal!.reason)
    if (spec.signal?.aborted) throw spec.signal.reason
    spec.signal?.addEventListener("abort", onAbort, { once: true })
    const timer = limit > 0 ? setTimeout(() => controller.abort(new GenjobsError({ code: "TIMEOUT", status: 0, message: `no answer within ${limit} ms` })), limit) : undefined
    try {
      const response = await send(urlOf(spec), {
        method: spec.method,
        headers: headersOf(spec),
        signal: controller.signal,
        ...(spec.json === undefined ? {} : { body: JSON.stringify(spec.json) }),
        ...(spec.body === undefined ? {} : { body: spec.body }),
        // A stream body needs it (Node's fetch refuses one without; browsers need it too).
        ...(spec.body instanceof ReadableStream ? { duplex: "half" } : {})
      })
      return response.ok ? await read(response) : response
    } catch (error) {
      throw controller.signal.aborted ? controller.signal.reason : error
    } finally {
      clearTimeout(timer)
      // An event stream keeps the caller's signal: aborting it must still end the stream.
      if (limit > 0) spec.signal?.removeEventListener("abort", onAbort)
    }
  }

  const request = async <A>(spec: RequestSpec, read: (response: Response) => Promise<A>): Promise<A> => {
    for (let n = 0; ; n++) {
      const mayRetry = spec.retry && n < retries
      let result: A | Response
      try {
        result = await attempt(spec, read)
      } catch (error) {
        if (spec.signal?.aborted) throw spec.signal.reason
        if (!mayRetry) {
          throw error instanceof GenjobsError
            ? error
            : new GenjobsError({ code: "NETWORK_ERROR", status: 0, message: String((error as Error)?.message ?? error), cause: error })
        }
        await sleep(backoffMs(n), spec.signal)
        continue
      }
      if (!(result instanceof Response) || result.ok) return result as A
      if (result.status === 503 && mayRetry) {
        await result.body?.cancel()
        await sleep(retryAfterMs(result) ?? backoffMs(n), spec.signal)
        continue
      }
      throw await errorFrom(result)
    }
  }

  return {
    retries,
    timeoutMs,
    request,
    json: (spec) => request(spec, (response) => response.json())
  }
}
