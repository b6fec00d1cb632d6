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
 * - at once when the queue in front of a request that has not started is longer than the pool
 *   serves in that time, from the hold times it observes (`expectedWaitMs`);
 * - else when the budget runs out in the queue: pg-pool reads `connectionTimeoutMillis` on each
 *   queued connect, so a request's connect is queued with what is left of its budget, and
 *   pg-pool itself takes it out of the queue when that runs out.
 * A request under way (served once already: a submit's commit after its key lookup) queues ahead
 * of requests that have not started, behind others under way (with `prioritize`, pg-pool's
 * private queue): else a burst spends the pool on key lookups whose commits then find the queue
 * those lookups made, and little completes. Callers without a budget (workers, sweepers) queue
 * as before, up to the store timeout. Opening a new connection keeps the store timeout: that is
 * the database's answer, not a queue.
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
  const queue = (pool as unknown as { _pendingQueue?: Array<object> })._pendingQueue
  const underWay = new WeakSet<object>()
  // Moves the waiter connect just queued (the last) ahead of those that have not started.
  const queueAhead = (queuedBefore: number) => {
    if (!Array.isArray(queue) || queue.length !== queuedBefore + 1) return
    const item = queue.pop()!
    underWay.add(item)
    const first = queue.findIndex((waiting) => !underWay.has(waiting))
    queue.splice(first === -1 ? queue.length : first, 0, item)
  }
  ;(pool as { connect: unknown }).connect = (callback?: ConnectCallback) => {
    const budget = currentStoreWaitBudget()
    if (budget === undefined || typeof callback !== "function") return connect(callback)
    const served: ConnectCallback = (error, client, done) => {
      if (client !== undefined) budget.underWay = true
      callback(error, client, done)
    }
    // A free connection, or room for a new one: nothing to queue for.
    if (pool.idleCount > 0 || pool.totalCount < connections) return connect(served)
    const storeTimeout = settings.connectionTimeoutMillis
    // Never longer than the store timeout: a budget past it waits as workers do.
    const bound = Math.floor(storeTimeout === undefined || storeTimeout === 0 ? budget.remainingMs : Math.min(budget.remainingMs, storeTimeout))
    const waitMs = budget.underWay ? 0 : expectedWaitMs({ waiting: pool.waitingCount, connections, holdMs })
    // (A bound of 0 would be pg-pool's "no timeout".)
    if (bound < 1 || waitMs > bound) return callback(busy(Math.max(waitMs, bound)), undefined, () => undefined)
    const queuedAt = performance.now()
    const queuedBefore = options.prioritize && budget.underWay ? queue?.length : undefined
    settings.connectionTimeoutMillis = bound
    try {
      const result = connect((error, client, done) => {
        budget.remainingMs -= performance.now() - queuedAt
        served(error?.message === POOL_QUEUE_TIMEOUT ? busy(bound) : error, client, done)
      })
      if (queuedBefore !== undefined) queueAhead(queuedBefore)
      return result
    } finally {
      settings.connectionTimeoutMillis = storeTimeout
    }
  }
  return pool
}
