import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const pgUp = await postgresAvailable()

/** A fresh store beside a client of its own on the same database: another process's writes. */
const freshStoreWithOther = () =>
  Layer.unwrap(
    Effect.promise(freshPostgresUrl).pipe(Effect.map((url) =>
      Layer.merge(layerPostgres({ url: Redacted.make(url!), databaseClock: false }), PgClient.layer({ url: Redacted.make(url!) }))
    ))
  )

if (!pgUp) {
  describe.skip("postgres lease renewal and deadlocks (server not reachable)", () => {
    it("renews through a deadlock", () => undefined)
  })
} else {
  describe("postgres: a lease renewal that meets a deadlock", () => {
    // A renewal locks its jobs' rows one by one, as do the other writes of a worker's jobs (its
    // provider reports, its endings) and any other process's. Two of them that take two rows in
    // opposite orders deadlock, and PostgreSQL aborts one: a renewal must not be the one that fails.
    it.live("is tried again, and renews every lease", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const other = yield* PgClient.PgClient
        const owner = yield* createAccount(10_000)
        for (let i = 0; i < 2; i++) yield* repo.submit({ job: job(owner.id, { createdAt: T0 + i }), maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
        const claimed = yield* repo.claimBatch({ workerId: "w1", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 2 })
        // The renewal takes the first id's row first, whatever order its plan reads them in.
        const [first, second] = claimed.map((j) => j.id).sort()
        expect(second).toBeDefined()
        const lockedSecond = yield* Deferred.make<void>()
        const renewalWaits = yield* Deferred.make<void>()
        // Another transaction holds the second row, then, once the renewal waits for it, asks for the first.
        const crossing = yield* other.withTransaction(Effect.gen(function*() {
          // Each waiter runs PostgreSQL's deadlock check deadlock_timeout (1 s) after it starts
          // waiting, and the first to run it is aborted: on a loaded machine this side's check
          // could come first. Its own 10 s makes the renewal the one aborted, as intended.
          yield* other`SET LOCAL deadlock_timeout = '10s'`
          yield* other`UPDATE genjobs_jobs SET provider_progress = 1 WHERE id = ${second!}`
          yield* Deferred.succeed(lockedSecond, undefined)
          yield* Deferred.await(renewalWaits)
          yield* other`UPDATE genjobs_jobs SET provider_progress = 2 WHERE id = ${first!}`
        })).pipe(Effect.forkChild)
        yield* Deferred.await(lockedSecond)
        const renewal = yield* repo.renewLeases([{ id: first!, workerId: "w1" }, { id: second!, workerId: "w1" }], T0 + 20, 60_000).pipe(
          Effect.forkChild
        )
        // Waits until the renewal waits on the second row's lock.
        while (true) {
          const rows = yield* other<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SET lease_expires_at%'`
          if (rows[0]!.n > 0) break
          yield* Effect.sleep("10 millis")
        }
        yield* Deferred.succeed(renewalWaits, undefined)
        // The renewal waited first, so PostgreSQL's deadlock check (after deadlock_timeout) aborts
        // it; the other transaction then commits, and the renewal, tried again, renews both.
        yield* Fiber.join(crossing)
        expect([...(yield* Fiber.join(renewal))].sort()).toEqual([first, second])
        const rows = yield* other<{ id: string; provider_progress: number }>`SELECT id, provider_progress FROM genjobs_jobs ORDER BY id`
        expect(rows.map((r) => r.provider_progress)).toEqual([2, 1])
      }).pipe(Effect.provide(freshStoreWithOther())), 30_000)
  })
}
