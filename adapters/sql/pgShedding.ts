import type Pg from "pg"
import { StoreBusy } from "../../src/domain/errors.js"
import { expectedWaitMs, observedHoldMs, shedRetryAfterSeconds } from "../../src/domain/storeWait.js"
import { currentStoreWaitBudget } from "../../src/ports/StoreWait.js"

/** What pg-pool 3 answers a waiter whose `connectionTimeoutMillis` ran out in its queue (checked by test/conformance/pgInternals.test.ts). */
export const POOL_QUEUE_TIMEOUT = "timeout exceeded when trying to connect"

type ConnectCallback = (error: Error | undefined, client: Pg.PoolClient | undefined, done: (release?: unknown) => void) => void

/**
 * Sheds requests the pool cannot serve within what is left of their wait budget
 * (`StoreWaitBudget`, given by the HTTP layer), failing their connect with StoreBusy before
 * anything reaches the database:
 * - at once when the queue in front of them is longer than the pool serves in that time, from
 *   the hold times it observes (`expectedWaitMs`);
 * - else when the budget runs out in the queue: pg-pool reads `connectionTimeoutMillis` on each
 *   queued connect, so a request's connect is queued with what is left of its budget, and
 *   pg-pool itself takes it out of the queue when that runs out.
 * Callers without a budget (workers, sweepers) queue as before, up to the store timeout. Opening
 * a new connection keeps the store timeout: that is the database's answer, not a queue.
 */
export const shedRequests = (pool: Pg.Pool): Pg.Pool => {
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
  const options = pool.options as { connectionTimeoutMillis?: number | undefined }
  ;(pool as { connect: unknown }).connect = (callback?: ConnectCallback) => {
    const budget = currentStoreWaitBudget()
    // A free connection, or room for a new one: nothing to queue for.
    const queues = pool.idleCount === 0 && pool.totalCount >= connections
    if (budget === undefined || typeof callback !== "function" || !queues) return connect(callback)
    const storeTimeout = options.connectionTimeoutMillis
    // Never longer than the store timeout: a budget past it waits as workers do.
    const bound = Math.floor(storeTimeout === undefined || storeTimeout === 0 ? budget.remainingMs : Math.min(budget.remainingMs, storeTimeout))
    const waitMs = expectedWaitMs({ waiting: pool.waitingCount, connections, holdMs })
    // (A bound of 0 would be pg-pool's "no timeout".)
    if (bound < 1 || waitMs > bound) return callback(busy(Math.max(waitMs, bound)), undefined, () => undefined)
    const queuedAt = performance.now()
    options.connectionTimeoutMillis = bound
    try {
      return connect((error, client, done) => {
        budget.remainingMs -= performance.now() - queuedAt
        callback(error?.message === POOL_QUEUE_TIMEOUT ? busy(bound) : error, client, done)
      })
    } finally {
      options.connectionTimeoutMillis = storeTimeout
    }
  }
  return pool
}
