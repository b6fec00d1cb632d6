import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { layerSqlStores } from "../../adapters/sql/layer.js"
import type { AccountId } from "../../src/domain/ids.js"
import { FAIR_STEP_UNIT } from "../../src/domain/fairShare.js"
import type { Job } from "../../src/domain/job.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const pgUp = await postgresAvailable()

/** Submits made at once, each answered by its outcome's tag, its refusal's code, or "failed"; and the submit statements sent. */
const together = (submits: ReadonlyArray<{ readonly job: Job; readonly maxConcurrentJobs?: number }>) =>
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const sent: Array<string> = []
    const outcomes = yield* Effect.all(
      submits.map(({ job, maxConcurrentJobs = 100 }) =>
        repo.submit({ job, maxConcurrentJobs, rateLimits: NO_LIMITS }).pipe(
          Effect.map((outcome) => outcome._tag as string),
          Effect.catch((e) => Effect.succeed(isRefusal(e) ? e.code : "failed"))
        )
      ),
      { concurrency: "unbounded" }
    ).pipe(Effect.provideService(Statement.CurrentTransformer, (statement) => {
      const text = statement.compile()[0]
      // A batch's statement, or the statement of a submit written alone (not the refusal's transaction).
      if (text.startsWith("WITH") && text.includes(`INSERT INTO "genjobs_jobs"`)) sent.push(text)
      return Effect.succeed(statement)
    }))
    return { outcomes, statements: sent.length }
  })

/** What each account holds after: its balance, its counted active jobs, its charge lines, its rollup's charged sum and jobs. */
const holdings = (ids: ReadonlyArray<AccountId>) =>
  Effect.gen(function*() {
    const accounts = yield* AccountRepo
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.forEach(ids, (id) =>
      Effect.gen(function*() {
        const balance = Option.getOrThrow(yield* accounts.get(id)).balanceMicroCents
        const [row] = yield* sql<{ active: string; lines: string; charged: string | null; jobs: string | null }>`
          SELECT a.active_jobs - (SELECT COUNT(*) FROM genjobs_active_job_ends e WHERE e.account_id = a.id) AS active,
            (SELECT COUNT(*) FROM genjobs_ledger l WHERE l.account_id = a.id AND l.kind = 'charge') AS lines,
            (SELECT SUM(charged_micro_cents) FROM genjobs_spend_hourly s WHERE s.account_id = a.id) AS charged,
            (SELECT SUM(jobs) FROM genjobs_spend_hourly s WHERE s.account_id = a.id) AS jobs
          FROM genjobs_accounts a WHERE a.id = ${id}`
        return {
          balance,
          active: Number(row!.active),
          lines: Number(row!.lines),
          charged: Number(row!.charged ?? 0),
          jobs: Number(row!.jobs ?? 0)
        }
      }))
  })

if (!pgUp) {
  describe.skip("postgres submit batches (server not reachable)", () => {
    it("shares a statement", () => undefined)
  })
} else {
  describe("postgres: plain submits that come together share one statement", () => {
    /** The stores over a host's own client, which the test also holds, as layerSqlStores lets a host do. */
    const stores = () =>
      Effect.promise(freshPostgresUrl).pipe(Effect.map((url) => {
        const client = PgClient.layer({ url: Redacted.make(url!) })
        return Layer.merge(layerSqlStores({ databaseClock: false }), client).pipe(Layer.provide(client))
      }))
    const provided = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.flatMap(stores(), (layer) => Effect.provide(effect, layer))

    it.live("each charged and counted once, and a refused one refused alone", () =>
      provided(Effect.gen(function*() {
        const funded = yield* Effect.forEach([1, 2, 3, 4, 5, 6], () => createAccount(10_000))
        const poor = yield* createAccount(500)
        const submits = [...funded, poor].map((owner, i) => ({ job: job(owner.id, { costMicroCents: 1_000, createdAt: T0 + i }) }))
        const { outcomes, statements } = yield* together(submits)
        expect(outcomes).toEqual(["Created", "Created", "Created", "Created", "Created", "Created", "INSUFFICIENT_BALANCE"])
        expect(statements).toBe(1)
        const repo = yield* JobRepo
        const stored = yield* Effect.forEach(submits, ({ job }) => repo.get(job.id))
        expect(stored.map(Option.isSome)).toEqual([true, true, true, true, true, true, false])
        // Each job counted once: by its own charge, the insert trigger skipping it.
        const each = { balance: 9_000, active: 1, lines: 1, charged: 1_000, jobs: 1 }
        expect(yield* holdings([...funded, poor].map((a) => a.id))).toEqual([
          ...funded.map(() => each),
          { balance: 500, active: 0, lines: 0, charged: 0, jobs: 0 }
        ])
      })))

    it.live("a submit the statement fails is written again alone, and fails alone", () =>
      provided(Effect.gen(function*() {
        const owners = yield* Effect.forEach([1, 2, 3], () => createAccount(10_000))
        const first = job(owners[0]!.id, { createdAt: T0 })
        expect((yield* together([{ job: first }])).outcomes).toEqual(["Created"])
        // The same job id again: its insert breaks the key, and the batch's statement with it.
        const { outcomes, statements } = yield* together([
          { job: { ...first, createdAt: T0 + 1 } },
          { job: job(owners[1]!.id, { createdAt: T0 + 2 }) },
          { job: job(owners[2]!.id, { createdAt: T0 + 3 }) }
        ])
        expect(outcomes).toEqual(["failed", "Created", "Created"])
        expect(statements).toBe(4)
        expect((yield* holdings(owners.map((a) => a.id))).map(({ active, balance }) => [balance, active])).toEqual([
          [9_000, 1],
          [9_000, 1],
          [9_000, 1]
        ])
      })))

    it.live("submits of one account share a statement, each decided as alone in its turn: its maximum stays exact", () =>
      provided(Effect.gen(function*() {
        const owner = yield* createAccount(10_000)
        const other = yield* createAccount(10_000)
        const { outcomes, statements } = yield* together([
          { job: job(owner.id, { createdAt: T0 }), maxConcurrentJobs: 2 },
          { job: job(owner.id, { createdAt: T0 + 1 }), maxConcurrentJobs: 2 },
          { job: job(other.id, { createdAt: T0 + 2 }), maxConcurrentJobs: 2 },
          { job: job(owner.id, { createdAt: T0 + 3 }), maxConcurrentJobs: 2 }
        ])
        expect(outcomes).toEqual(["Created", "Created", "Created", "CONCURRENT_JOBS_EXCEEDED"])
        expect(statements).toBe(1)
        expect((yield* holdings([owner.id, other.id])).map(({ active, balance }) => [balance, active])).toEqual([[8_000, 2], [9_000, 1]])
      })))

    it.live("after one account's submit its balance refuses, a cheaper one of the same batch still passes (written again)", () =>
      provided(Effect.gen(function*() {
        const owner = yield* createAccount(2_500)
        const { outcomes, statements } = yield* together([
          { job: job(owner.id, { costMicroCents: 1_000, createdAt: T0 }) },
          { job: job(owner.id, { costMicroCents: 2_000, createdAt: T0 + 1 }) },
          { job: job(owner.id, { costMicroCents: 1_000, createdAt: T0 + 2 }) },
          { job: job(owner.id, { costMicroCents: 500, createdAt: T0 + 3 }) },
          { job: job(owner.id, { costMicroCents: 1, createdAt: T0 + 4 }) }
        ])
        expect(outcomes).toEqual(["Created", "INSUFFICIENT_BALANCE", "Created", "Created", "INSUFFICIENT_BALANCE"])
        // The first statement decides the first two; the second, the three after the refused one.
        expect(statements).toBe(2)
        expect(yield* holdings([owner.id])).toEqual([{ balance: 0, active: 3, lines: 3, charged: 2_500, jobs: 3 }])
      })))

    it.live("one account's jobs of one statement get the fair keys they would one after another", () =>
      provided(Effect.gen(function*() {
        const owner = yield* createAccount(10_000)
        const submits = [0, 1, 2].map((i) => ({ job: job(owner.id, { createdAt: T0 + i }) }))
        expect(yield* together(submits)).toEqual({ outcomes: ["Created", "Created", "Created"], statements: 1 })
        const repo = yield* JobRepo
        const keys = (yield* Effect.forEach(submits, ({ job }) => repo.get(job.id))).map((found) => Option.getOrThrow(found).fairKey)
        expect(keys.map((key) => key - keys[0]!)).toEqual([0, FAIR_STEP_UNIT, 2 * FAIR_STEP_UNIT])
      })))

    it.live("a statement takes its accounts' rows in their order, whatever its submits' order: two statements never deadlock", () =>
      provided(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [low, high] = (yield* Effect.forEach([1, 2], () => createAccount(10_000))).map((a) => a.id).sort()
        const lockedLow = yield* Deferred.make<void>()
        const batchWaits = yield* Deferred.make<void>()
        // Another connection holds the first account's row; once the batch waits for it, it asks for the second's without waiting.
        const holder = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT id FROM genjobs_accounts WHERE id = ${low!} FOR UPDATE`
          yield* Deferred.succeed(lockedLow, undefined)
          yield* Deferred.await(batchWaits)
          return yield* Effect.exit(sql`SELECT id FROM genjobs_accounts WHERE id = ${high!} FOR UPDATE NOWAIT`)
        })).pipe(Effect.forkChild)
        yield* Deferred.await(lockedLow)
        // The second account's submit first: a statement locking in its submits' order would hold that row while it waits.
        const batch = yield* together([{ job: job(high!, { createdAt: T0 }) }, { job: job(low!, { createdAt: T0 + 1 }) }]).pipe(Effect.forkChild)
        while (true) {
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%jsonb_to_recordset%'`
          if (rows[0]!.n > 0) break
          yield* Effect.sleep("10 millis")
        }
        yield* Deferred.succeed(batchWaits, undefined)
        expect(Exit.isSuccess(yield* Fiber.join(holder))).toBe(true)
        expect(yield* Fiber.join(batch)).toEqual({ outcomes: ["Created", "Created"], statements: 1 })
      })))

    it.live("a submit inside the host's own transaction is written there, not in a batch", () =>
      provided(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const inside = job(owner.id, { createdAt: T0 })
        const outside = [job(owner.id, { createdAt: T0 + 1 }), job((yield* createAccount(10_000)).id, { createdAt: T0 + 2 })]
        const results = yield* Effect.all([
          Effect.exit(sql.withTransaction(Effect.andThen(
            repo.submit({ job: inside, maxConcurrentJobs: 100, rateLimits: NO_LIMITS }),
            Effect.fail("the host's rollback" as const)
          ))),
          ...outside.map((j) => Effect.map(repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS }), (o) => o._tag))
        ], { concurrency: "unbounded" })
        expect(Exit.isFailure(results[0] as Exit.Exit<unknown, unknown>)).toBe(true)
        expect(results.slice(1)).toEqual(["Created", "Created"])
        expect(Option.isNone(yield* repo.get(inside.id))).toBe(true)
        expect((yield* holdings([owner.id])).map(({ active, balance }) => [balance, active])).toEqual([[9_000, 1]])
      })))
  })
}
