import type { EngineFetch } from "../../src/http/webHandler.js"

/** What a mount needs of an engine: `makeEngine(...)`'s result, or any object with its `fetch`. */
export interface Mountable {
  readonly fetch: EngineFetch
}

export interface MountOptions {
  /**
   * Proxies in front of this server whose X-Forwarded-For entries are believed: the client is
   * the Nth address from the right. Default: the engine's `http.trustedProxyHops` (0, the socket).
   */
  readonly trustedProxyHops?: number | undefined
}

export interface BasePathMountOptions extends MountOptions {
  /** The path the engine is mounted under, such as "/api/genjobs". Default: the engine's `basePath`. */
  readonly basePath?: string | undefined
}
