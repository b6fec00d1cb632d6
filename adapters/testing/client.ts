import { Effect, Schema } from "effect"
import type { EngineFetch } from "../../src/http/webHandler.js"

/** The origin test requests go to; output and upload URLs start with it too. */
export const TEST_ORIGIN = "http://genjobs.test"

/** An HTTP answer: `body` is parsed JSON for JSON answers, text otherwise. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <key>`: an API key secret or the admin token. */
  readonly key?: string | undefined
  /** Sent as JSON. */
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The client address the engine sees (IP allow-lists). Default 127.0.0.1. */
  readonly remoteAddress?: string | undefined
}

/** A non-2xx answer from a helper that expects success: the engine's error code, message and envelope. */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  body: Schema.Unknown
}) {}

export type Requester = (method: string, path: string, options?: RequestOptions) => Effect.Effect<Reply>

/** Requests through the engine's web handler, as a client under `root` would send them. */
export const makeRequester = (fetch: EngineFetch, root: string): Requester => (method, path, options = {}) =>
  Effect.promise(async () => {
    const hasBody = options.body !== undefined
    const response = await fetch(
      new Request(`${root}${path}`, {
        method,
        headers: {
          ...(hasBody ? { "content-type": "application/json" } : {}),
          ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }),
          ...options.headers
        },
        ...(hasBody ? { body: JSON.stringify(options.body) } : {})
      }),
      { remoteAddress: options.remoteAddress ?? "127.0.0.1" }
    )
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json")
    return { status: response.status, headers: response.headers, body: isJson && text !== "" ? JSON.parse(text) : text }
  })

/** The body of a 2xx answer; anything else fails with ApiError. */
export const successBody = <A>(reply: Reply): Effect.Effect<A, ApiError> =>
  reply.status >= 200 && reply.status < 300
    ? Effect.succeed(reply.body as A)
    : Effect.fail(
      new ApiError({
        status: reply.status,
        code: reply.body?.error?.code ?? "HTTP_ERROR",
        message: reply.body?.error?.message ?? `HTTP ${reply.status}`,
        body: reply.body
      })
    )
