import { Context, Layer, Redacted } from "effect"

export interface HttpSettings {
  /** Bearer token of the admin API; undefined turns the admin API off. */
  readonly adminToken: Redacted.Redacted<string> | undefined
  /** Proxies in front of the server whose X-Forwarded-For entries are believed. */
  readonly trustedProxyHops: number
}

/** HttpSettings as a host writes them: a plain string token is wrapped so it never shows in logs. */
export interface HttpOptions {
  readonly adminToken?: Redacted.Redacted<string> | string | undefined
  readonly trustedProxyHops?: number | undefined
}

export class HttpConfig extends Context.Tag("genjobs/HttpConfig")<HttpConfig, HttpSettings>() {
  static readonly layer = (options: HttpOptions = {}) =>
    Layer.succeed(HttpConfig, {
      adminToken: typeof options.adminToken === "string" ? Redacted.make(options.adminToken) : options.adminToken,
      trustedProxyHops: options.trustedProxyHops ?? 0
    })
}
