import { Context, Layer, Redacted } from "effect"

/** 1 MiB: a job's input and the admin API's documents fit with room to spare; files go through uploads. */
export const DEFAULT_MAX_JSON_BODY_BYTES = 1_048_576

/** 30 s: a JSON body of at most 1 MiB arrives in that time over any link a client should use. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000

/** 30 s without a byte: an upload on a slow link keeps sending, one that stalled this long has stopped. */
export const DEFAULT_UPLOAD_IDLE_TIMEOUT_MS = 30_000

/**
 * 1 s: a request waits at most this for the store's first pooled connection before it is shed
 * with 503 and Retry-After; a client told at once can retry elsewhere or later, while one queued for
 * the store timeout (5 s) holds a socket and a place in the queue for a likely 503 anyway.
 */
export const DEFAULT_STORE_WAIT_MS = 1_000

export interface HttpSettings {
  /** Bearer token of the admin API, recorded as the actor `admin`. */
  readonly adminToken: Redacted.Redacted<string> | undefined
  /** Named admin tokens, each recorded in the audit log under its name. With neither, the admin API is off. */
  readonly adminTokens: ReadonlyArray<{ readonly name: string; readonly token: Redacted.Redacted<string> }>
  /** Proxies in front of the server whose X-Forwarded-For entries are believed. */
  readonly trustedProxyHops: number
  /** The largest request body read, in bytes (upload PUTs have their own limits); larger is 413. */
  readonly maxJsonBodyBytes: number
  /** The longest a request body (upload PUTs aside) may take to arrive, from its first read; then 408 REQUEST_TIMEOUT. */
  readonly bodyTimeoutMs: number
  /** The longest an upload PUT's body may go without a byte; then 408 REQUEST_TIMEOUT. Its total time is not bounded. */
  readonly uploadIdleTimeoutMs: number
  /** Whether /dashboard is served; it is only ever served while the admin API is on. */
  readonly dashboard: boolean
  /**
   * The longest a request waits for the store's first connection before it is shed: 503 with
   * Retry-After, nothing written. Shed at once when the queue it finds is longer than the pool
   * serves in that time. Once served it is never shed. Workers and sweepers are never shed:
   * they wait up to the store's own timeout. 0 turns shedding off: requests wait as workers do.
   */
  readonly storeWaitMs: number
}

/** HttpSettings as a host writes them: a plain string token is wrapped so it never shows in logs. */
export interface HttpOptions {
  readonly adminToken?: Redacted.Redacted<string> | string | undefined
  /** Named admin tokens by actor name: `{ alice: "tok1", bob: "tok2" }`. */
  readonly adminTokens?: Readonly<Record<string, Redacted.Redacted<string> | string>> | undefined
  readonly trustedProxyHops?: number | undefined
  readonly maxJsonBodyBytes?: number | undefined
  readonly bodyTimeoutMs?: number | undefined
  readonly uploadIdleTimeoutMs?: number | undefined
  /** The operator dashboard at /dashboard, on with the admin API unless this is false (docs/dashboard.md). */
  readonly dashboard?: boolean | undefined
  /** How long a request may wait for the store before it is shed; default 1000 ms, 0 never sheds. */
  readonly storeWaitMs?: number | undefined
}

export class HttpConfig extends Context.Service<HttpConfig, HttpSettings>()("genjobs/HttpConfig") {
  static readonly layer = (options: HttpOptions = {}) =>
    Layer.succeed(HttpConfig, {
      adminToken: typeof options.adminToken === "string" ? Redacted.make(options.adminToken) : options.adminToken,
      adminTokens: Object.entries(options.adminTokens ?? {}).map(([name, token]) => ({
        name,
        token: typeof token === "string" ? Redacted.make(token) : token
      })),
      trustedProxyHops: options.trustedProxyHops ?? 0,
      maxJsonBodyBytes: options.maxJsonBodyBytes ?? DEFAULT_MAX_JSON_BODY_BYTES,
      bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
      uploadIdleTimeoutMs: options.uploadIdleTimeoutMs ?? DEFAULT_UPLOAD_IDLE_TIMEOUT_MS,
      dashboard: options.dashboard ?? true,
      storeWaitMs: options.storeWaitMs ?? DEFAULT_STORE_WAIT_MS
    })
}
