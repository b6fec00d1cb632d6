import * as Options from "@effect/cli/Options"
import { Config, Effect, Option, Redacted } from "effect"
import { CliError } from "./errors.js"

/** The options every command that talks to a server takes. */
export const connection = {
  url: Options.text("url").pipe(
    Options.withDescription("The server's URL (default GENJOBS_URL, else http://localhost:3000)"),
    Options.optional
  ),
  adminToken: Options.redacted("admin-token").pipe(
    Options.withDescription("An admin token of the server (default GENJOBS_ADMIN_TOKEN)"),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print JSON for scripts instead of tables"))
}

export interface Connection {
  readonly url: Option.Option<string>
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
}

export interface AdminClient {
  readonly call: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Effect.Effect<any, CliError>
}

/** The admin API of the server the options (or the environment) name. The token never leaves the Authorization header. */
export const adminClient = (options: Connection): Effect.Effect<AdminClient, CliError> =>
  Effect.gen(function*() {
    const fromEnv = yield* Config.all({
      url: Config.string("GENJOBS_URL").pipe(Config.withDefault("http://localhost:3000")),
      token: Config.option(Config.redacted("GENJOBS_ADMIN_TOKEN"))
    }).pipe(Effect.mapError((e) => new CliError({ code: "CONFIG_ERROR", message: String(e) })))
    const base = Option.getOrElse(options.url, () => fromEnv.url).replace(/\/+$/, "")
    const token = Option.orElse(options.adminToken, () => fromEnv.token).pipe(
      Option.filter((t) => Redacted.value(t) !== "")
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
export const allPages = <K extends string>(
  client: AdminClient,
  path: string,
  params: Record<string, string | number | undefined>,
  key: K,
  onPage: (count: number) => Effect.Effect<void>
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
