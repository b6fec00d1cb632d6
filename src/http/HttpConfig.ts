import { Context, Layer, type Redacted } from "effect"

export interface HttpSettings {
  /** Bearer token of the admin API; undefined turns the admin API off. */
  readonly adminToken: Redacted.Redacted<string> | undefined
  /** Proxies in front of the server whose X-Forwarded-For entries are believed. */
  readonly trustedProxyHops: number
}

export class HttpConfig extends Context.Tag("genjobs/HttpConfig")<HttpConfig, HttpSettings>() {
  static readonly layer = (settings: Partial<HttpSettings> = {}) =>
    Layer.succeed(HttpConfig, { adminToken: undefined, trustedProxyHops: 0, ...settings })
}
