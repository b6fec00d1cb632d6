import { Clock, Duration, Effect } from "effect"
import type { Discount, Scope } from "../../src/domain/account.js"
import type { CancelResponse, JobList, JobView, SubmitResponse } from "../../src/http/schemas/jobs.js"
import { type ApiError, type Reply, type Requester, type RequestOptions, successBody } from "./client.js"

export interface AccountOptions {
  readonly name?: string | undefined
  /** Opening balance in catalog credits. Default 1,000. */
  readonly credits?: number | undefined
  /** Default 5, as the admin API. */
  readonly maxConcurrentJobs?: number | undefined
  readonly segments?: ReadonlyArray<string> | undefined
  readonly allowedModels?: ReadonlyArray<string> | undefined
  readonly discounts?: ReadonlyArray<Discount> | undefined
  /** The key's scopes; empty (the default) means all. */
  readonly scopes?: ReadonlyArray<Scope> | undefined
  /** The key's IP allow-list; empty (the default) means any address. */
  readonly allowedIPs?: ReadonlyArray<string> | undefined
  /** The key expires this long after now, on the engine's clock (TestClock in Effect tests). */
  readonly expiresIn?: Duration.Input | undefined
  /** The address the helpers' requests come from. Default 127.0.0.1. */
  readonly address?: string | undefined
}

export interface SubmitOptions {
  readonly version?: string | undefined
  readonly webhookUrl?: string | undefined
  readonly idempotencyKey?: string | undefined
}

export interface ListQuery {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly status?: string | undefined
  readonly modelId?: string | undefined
}

/** An account with one API key, and the Jobs API bound to that key. Every call goes through HTTP. */
export interface TestAccount {
  readonly accountId: string
  readonly keyId: string
  /** The key's secret, for your own requests. */
  readonly key: string
  /** Signs this account's webhooks: check `SentWebhook`s with `verifyWebhook`. */
  readonly webhookSecret: string
  readonly submit: (
    model: string,
    input?: Record<string, unknown>,
    options?: SubmitOptions
  ) => Effect.Effect<typeof SubmitResponse.Type, ApiError>
  readonly get: (jobId: string) => Effect.Effect<typeof JobView.Type, ApiError>
  readonly cancel: (jobId: string) => Effect.Effect<typeof CancelResponse.Type, ApiError>
  readonly list: (query?: ListQuery) => Effect.Effect<typeof JobList.Type, ApiError>
  /** The balance in catalog credits. */
  readonly balance: Effect.Effect<number, ApiError>
  /** Any request with this key, answered whatever its status. */
  readonly request: (method: string, path: string, options?: Omit<RequestOptions, "key">) => Effect.Effect<Reply>
  /** The same helpers, sent from another client address. */
  readonly from: (address: string) => TestAccount
}

const DEFAULT_CREDITS = 1_000

const bound = (
  request: Requester,
  admin: string,
  creditMicroCents: number,
  created: Pick<TestAccount, "accountId" | "keyId" | "key" | "webhookSecret">,
  address: string
): TestAccount => {
  const call: TestAccount["request"] = (method, path, options = {}) =>
    request(method, path, { remoteAddress: address, ...options, key: created.key })
  return {
    ...created,
    submit: (model, input = {}, options = {}) =>
      call("POST", "/v1/jobs/submit", {
        // JSON drops undefined fields, so unset options stay absent.
        body: { model, input, version: options.version, webhookUrl: options.webhookUrl },
        ...(options.idempotencyKey === undefined ? {} : { headers: { "idempotency-key": options.idempotencyKey } })
      }).pipe(Effect.flatMap(successBody<typeof SubmitResponse.Type>)),
    get: (jobId) => call("GET", `/v1/jobs/${encodeURIComponent(jobId)}`).pipe(Effect.flatMap(successBody<typeof JobView.Type>)),
    cancel: (jobId) =>
      call("POST", `/v1/jobs/${encodeURIComponent(jobId)}/cancel`).pipe(Effect.flatMap(successBody<typeof CancelResponse.Type>)),
    list: (query = {}) => {
      const params = new URLSearchParams(
        Object.entries(query).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]]))
      )
      const search = params.size === 0 ? "" : `?${params}`
      return call("GET", `/v1/jobs${search}`).pipe(Effect.flatMap(successBody<typeof JobList.Type>))
    },
    balance: request("GET", `/admin/accounts/${created.accountId}`, { key: admin }).pipe(
      Effect.flatMap(successBody<{ readonly balanceMicroCents: number }>),
      Effect.map((account) => account.balanceMicroCents / creditMicroCents)
    ),
    request: call,
    from: (other) => bound(request, admin, creditMicroCents, created, other)
  }
}

/** Creates the account and its key through the admin API. */
export const createAccount = (
  request: Requester,
  admin: string,
  creditMicroCents: number,
  options: AccountOptions
): Effect.Effect<TestAccount, ApiError> =>
  Effect.gen(function*() {
    const account = yield* request("POST", "/admin/accounts", {
      key: admin,
      body: {
        name: options.name ?? "test account",
        creditsMicroCents: Math.round((options.credits ?? DEFAULT_CREDITS) * creditMicroCents),
        ...(options.maxConcurrentJobs === undefined ? {} : { maxConcurrentJobs: options.maxConcurrentJobs }),
        segments: options.segments ?? [],
        allowedModels: options.allowedModels ?? [],
        discounts: options.discounts ?? []
      }
    }).pipe(Effect.flatMap(successBody<{ readonly id: string; readonly webhookSecret: string }>))
    const expiresAt = options.expiresIn === undefined
      ? null
      : new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(options.expiresIn)).toISOString()
    const key = yield* request("POST", `/admin/accounts/${account.id}/keys`, {
      key: admin,
      body: { name: "test key", scopes: options.scopes ?? [], allowedIPs: options.allowedIPs ?? [], expiresAt }
    }).pipe(Effect.flatMap(successBody<{ readonly id: string; readonly key: string }>))
    const created = { accountId: account.id, keyId: key.id, key: key.key, webhookSecret: account.webhookSecret }
    return bound(request, admin, creditMicroCents, created, options.address ?? "127.0.0.1")
  })
