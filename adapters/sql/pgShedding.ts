import type Pg from "pg"
import { StoreBusy } from "../../src/domain/errors.js"
import { expectedWaitMs, observedHoldMs, shedRetryAfterSeconds } from "../../src/domain/storeWait.js"
import { currentRequestStoreWait } from "../../src/ports/StoreWait.js"

/** What pg-pool 3 answers a waiter whose `connectionTimeoutMillis` ran out in its queue (checked by test/conformance/pgInternals.test.ts). */
export const POOL_QUEUE_TIMEOUT = "timeout exceeded when trying to connect"

type ConnectCallback = (error: Error | undefined, client: Pg.PoolClient | undefined, done: (release?: unknown) => void) => void

/**
 * Sheds requests the pool cannot serve within their bound (`RequestStoreWait`, given by the HTTP
 * layer), failing their first connect with StoreBusy, before anything of them reached the database:
 * - at once when the queue in front of them is longer than the pool serves in the bound, from
 *   the hold times it observes (`expectedWaitMs`);
 * - else when the bound runs out in the queue: pg-pool reads `connectionTimeoutMillis` on each
 *   queued connect, so the connect is queued with the bound, and pg-pool itself takes it out of
 *   the queue when that runs out.
 * A request the pool served once is under way: never shed, and its later connects queue ahead
 * of requests that have not started, behind others under way (with `prioritize`: pg-pool's
 * private queue), else a burst spends the pool on key lookups whose commits then wait behind
 * the next thousand lookups. Callers outside any request (workers, sweepers) queue as before,
 * up to the store timeout. Opening a new connection keeps the store timeout: that is the
 * database's answer, not a queue.
 */
export const shedRequests = (pool: Pg.Pool, options: { readonly prioritize: boolean }): Pg.Pool => {
  const connections = pool.options.max ?? 10
  let holdMs: number | undefined
  const heldSince = new WeakMap<Pg.PoolClient, number>()
  pool.on("acquire", (client) => void heldSince.set(client, performance.now()))
  pool.on("release", (_error, client) => {
    const since = heldSince.get(client)
    // Only holds while others wait count: those are what a queue moves at, where a migration's
    // or a lone sweep's long hold on an idle pool is not.
    if (since !== undefined && pool.waitingCount > 0) holdMs = observedHoldMs(holdMs, performance.now() - since)
  })
  const busy = (waitMs: number) => new StoreBusy({ reason: "store_busy", retryAfterSeconds: shedRetryAfterSeconds(waitMs) })
  const connect = pool.connect.bind(pool) as (callback?: ConnectCallback) => unknown
  const settings = pool.options as { connectionTimeoutMillis?: number | undefined }
  // pg-pool 3's waiters, first served first (used only with `prioritize`: pgInternals.ts).
  const queue = options.prioritize ? (pool as unknown as { _pendingQueue?: Array<object> })._pendingQueue : undefined
  const underWay = new WeakSet<object>()
  // Connects, and moves the waiter this queued (the last, if any) ahead of those not under way.
  const connectAhead = (callback: ConnectCallback) => {
    if (!Array.isArray(queue)) return connect(callback)
    const before = queue.length
    const result = connect(callback)
    if (queue.length === before + 1) {
      const item = queue.pop()!
      underWay.add(item)
      const first = queue.findIndex((waiting) => !underWay.has(waiting))
      queue.splice(first === -1 ? queue.length : first, 0, item)
    }
    return result
  }
  ;(pool as { connect: unknown }).connect = (callback?: ConnectCallback) => {
    const wait = currentRequestStoreWait()
    if (wait === undefined || typeof callback !== "function") return connect(callback)
    if (wait.underWay) return connectAhead(callback)
    const served: ConnectCallback = (error, client, done) => {
      if (client !== undefined) wait.underWay = true
      callback(error, client, done)
    }
    // A free connection, or room for a new one: nothing to queue for.
    if (pool.idleCount > 0 || pool.totalCount < connections) return connect(served)
    const storeTimeout = settings.connectionTimeoutMillis
    // Never longer than the store timeout: a bound past it waits as workers do.
    const bound = storeTimeout === undefined || storeTimeout === 0 ? wait.boundMs : Math.min(wait.boundMs, storeTimeout)
    const waitMs = expectedWaitMs({ waiting: pool.waitingCount, connections, holdMs })
    if (waitMs > bound) return callback(busy(waitMs), undefined, () => undefined)
    settings.connectionTimeoutMillis = bound
    try {
      return connect((error, client, done) => served(error?.message === POOL_QUEUE_TIMEOUT ? busy(bound) : error, client, done))
    } finally {
      settings.connectionTimeoutMillis = storeTimeout
    }
  }
  return pool
}
