import { fetch as undiciFetch } from "undici"
import { connectionPool, DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"

export interface PooledFetchOptions {
  /** Connections kept to each host of the package's API. Default 64, as the built-in providers. */
  readonly maxConnections?: number | undefined
}

/**
 * A `fetch` for an AI SDK provider package (`createReplicate({ fetch: pooledFetch() })`) that
 * sends through a connection pool of its own, as the built-in providers do: at most
 * `maxConnections` sockets to each host however many generations are polled at once (a process's
 * file handles stay bounded), idle connections closed by the pool before a server closes them
 * (a start sent on a connection the server is closing cannot be told from one it took). The
 * packages' default, Node's global fetch, opens a socket per request in flight with no bound.
 * undici's own fetch rather than the global one with a `dispatcher`: Node 22's bundled undici
 * does not accept this package's pool.
 */
export const pooledFetch = (options: PooledFetchOptions = {}): typeof globalThis.fetch => {
  const dispatcher = connectionPool(options.maxConnections ?? DEFAULT_MAX_CONNECTIONS)
  return ((input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...init, dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as typeof globalThis.fetch
}
