import Pg from "pg"
import { describe, expect, it } from "vitest"
import { installedPgVersions, internalsKnown, KNOWN_MAJORS } from "../../adapters/sql/pgInternals.js"
import { POOL_QUEUE_TIMEOUT } from "../../adapters/sql/pgShedding.js"
import { freshPostgresUrl } from "../support/postgres.js"

// Undefined without a server, except under CI, where a missing server fails the run.
const url = await freshPostgresUrl()

/**
 * The private members of `pg` and `pg-pool` the pool and client patches rely on
 * (adapters/sql/pgPool.ts, adapters/sql/pgShedding.ts, adapters/sql/preparedStatements.ts), checked on the installed
 * releases: a release that renames or changes one fails here, before the patches go quietly off.
 */
describe("pg internals the patches use", () => {
  it("the installed releases are the majors the patches were written for", () => {
    const versions = installedPgVersions()
    expect(versions.pg).toMatch(new RegExp(`^${KNOWN_MAJORS.pg}\\.`))
    expect(versions["pg-pool"]).toMatch(new RegExp(`^${KNOWN_MAJORS["pg-pool"]}\\.`))
    expect(internalsKnown(versions)).toBe(true)
  })

  it("other majors, or versions that cannot be read, run without the patch", () => {
    expect(internalsKnown({ pg: "9.0.0", "pg-pool": "3.14.0" })).toBe(false)
    expect(internalsKnown({ pg: "8.23.1", "pg-pool": "4.0.0" })).toBe(false)
    expect(internalsKnown({ pg: undefined, "pg-pool": "3.14.0" })).toBe(false)
  })

  it("pg-pool hands connections to waiters through _pulseQueue", async () => {
    expect(typeof (Pg.Pool.prototype as unknown as { _pulseQueue?: unknown })._pulseQueue).toBe("function")
    // And calls it on release: a pool whose _pulseQueue is replaced sees the call.
    const pool = new Pg.Pool({ connectionString: "postgres://127.0.0.1:1/none", max: 1 })
    let pulses = 0
    const internals = pool as unknown as { _pulseQueue: () => void }
    const original = internals._pulseQueue.bind(pool)
    internals._pulseQueue = () => {
      pulses++
      original()
    }
    await pool.connect().catch(() => undefined)
    expect(pulses).toBeGreaterThan(0)
    await pool.end()
  })

  it.skipIf(url === undefined)("pg-pool reads connectionTimeoutMillis on each queued connect, answers POOL_QUEUE_TIMEOUT when it runs out, and emits acquire and release", async () => {
    // What shedRequests (adapters/sql/pgShedding.ts) relies on to queue a request with its own bound.
    const pool = new Pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 60_000 })
    const events: Array<string> = []
    pool.on("acquire", () => void events.push("acquire"))
    pool.on("release", () => void events.push("release"))
    try {
      const held = await pool.connect()
      const options = pool.options as { connectionTimeoutMillis?: number }
      options.connectionTimeoutMillis = 50
      const queued = pool.connect()
      options.connectionTimeoutMillis = 60_000
      const started = Date.now()
      await expect(queued).rejects.toThrow(POOL_QUEUE_TIMEOUT)
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(pool.waitingCount).toBe(0)
      held.release()
      expect(events).toEqual(["acquire", "release"])
    } finally {
      await pool.end()
    }
  })

  it.skipIf(url === undefined)("pg-pool queues waiters in _pendingQueue, first served first", async () => {
    // What shedRequests (adapters/sql/pgShedding.ts) reorders to serve requests under way first.
    const pool = new Pg.Pool({ connectionString: url, max: 1 })
    const queue = (pool as unknown as { _pendingQueue?: Array<unknown> })._pendingQueue
    try {
      expect(Array.isArray(queue)).toBe(true)
      const held = await pool.connect()
      const served: Array<string> = []
      const first = pool.connect().then((client) => (served.push("first"), client.release()))
      const second = pool.connect().then((client) => (served.push("second"), client.release()))
      expect(queue!.length).toBe(2)
      // Swapped, the second is served first.
      queue!.unshift(queue!.pop())
      held.release()
      await Promise.all([first, second])
      expect(served).toEqual(["second", "first"])
    } finally {
      await pool.end()
    }
  })

  it.skipIf(url === undefined)("a pg client's _txStatus says I outside a transaction and T inside one", async () => {
    const client = new Pg.Client({ connectionString: url })
    await client.connect()
    const status = () => (client as unknown as { _txStatus?: string })._txStatus
    try {
      await client.query("SELECT 1")
      expect(status()).toBe("I")
      await client.query("BEGIN")
      expect(status()).toBe("T")
      await client.query("ROLLBACK")
      expect(status()).toBe("I")
    } finally {
      await client.end()
    }
  })
})
