import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { CliError } from "./errors.js"
import { CliIo } from "./io.js"

/** The connection options of a command (commands.ts), as given. */
export interface Connection {
  readonly url: string | undefined
  readonly "admin-token": string | undefined
}

export interface AdminClient {
  readonly call: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Effect.Effect<any, CliError>
}

/** The admin API of the server the options (or the environment) name. The token never leaves the Authorization header. */
export const adminClient = (options: Connection): Effect.Effect<AdminClient, CliError, CliIo> =>
  Effect.gen(function*() {
    // The environment read as it is: effect/Config would load most of Effect for two variables.
    const { env } = yield* Effect.service(CliIo)
    const base = (options.url ?? env["GENJOBS_URL"] ?? "http://localhost:3000").replace(/\/+$/, "")
    const token = Option.fromNullishOr(options["admin-token"] ?? env["GENJOBS_ADMIN_TOKEN"]).pipe(
      Option.filter((t) => t !== ""),
      Option.map(Redacted.make)
    )
    if (Option.isNone(token)) {
      return yield* Effect.fail(new CliError({ code: "ADMIN_TOKEN_MISSING", message: "Pass --admin-token or set GENJOBS_ADMIN_TOKEN" }))
    }
    const authorization = `Bearer ${Redacted.value(token.value)}`
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      Effect.gen(function*() {
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            fetch(`${base}${path}`, {
              method,
              signal,
              headers: { ...headers, authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
              ...(body === undefined ? {} : { body: JSON.stringify(body) })
            }),
          catch: (cause) =>
            new CliError({
              code: "CONNECTION_FAILED",
              message: `Cannot reach ${base}: ${(cause as { cause?: { code?: string } }).cause?.code ?? String(cause)}`
            })
        })
        const text = yield* Effect.promise(() => response.text())
        let parsed: any = undefined
        try {
          parsed = text === "" ? undefined : JSON.parse(text)
        } catch {
          // Not JSON: reported below by status.
        }
        if (response.ok) return parsed
        const error = parsed?.error
        return yield* Effect.fail(
          new CliError({
            code: typeof error?.code === "string" ? error.code : `HTTP_${response.status}`,
            message: typeof error?.message === "string" ? error.message : `${method} ${path} answered ${response.status}`,
            status: response.status,
            requestId: parsed?.requestId ?? response.headers.get("x-request-id") ?? undefined,
            details: error?.details
          })
        )
      })
    return { call }
  })

/** Query parameters from the given values; absent ones are left out. */
export const query = (params: Record<string, string | number | undefined>): string => {
  const entries = Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined)
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`
}

/**
 * Every page of a list, following nextCursor; `onPage` hears how many items have come so far,
 * for the progress line of long listings.
 */
export const allPages = <K extends string, R>(
  client: AdminClient,
  path: string,
  params: Record<string, string | number | undefined>,
  key: K,
  onPage: (count: number) => Effect.Effect<void, never, R>
) =>
  Effect.gen(function*() {
    const items: Array<any> = []
    let cursor: string | undefined = undefined
    do {
      const page: any = yield* client.call("GET", `${path}${query({ ...params, limit: 100, cursor })}`)
      items.push(...page[key])
      yield* onPage(items.length)
      cursor = page.hasMore ? page.nextCursor : undefined
    } while (cursor !== undefined)
    return items
  })
