import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Redacted } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { layerSqlStores } from "../../adapters/sql/layer.js"
import type { AccountId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const probe = await freshPostgresUrl()

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

if (probe === undefined) {
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

    it.live("submits of one account never share a statement; their maximum stays exact", () =>
      provided(Effect.gen(function*() {
        const owner = yield* createAccount(10_000)
        const other = yield* createAccount(10_000)
        const { outcomes, statements } = yield* together([
          { job: job(owner.id, { createdAt: T0 }), maxConcurrentJobs: 2 },
          { job: job(owner.id, { createdAt: T0 + 1 }), maxConcurrentJobs: 2 },
          { job: job(other.id, { createdAt: T0 + 2 }), maxConcurrentJobs: 2 },
          { job: job(owner.id, { createdAt: T0 + 3 }), maxConcurrentJobs: 2 }
        ])
        // The owner's second and third go in statements of their own, at once: which of its three the maximum refuses is the store's order.
        expect(outcomes[2]).toBe("Created")
        expect([outcomes[0], outcomes[1], outcomes[3]].sort()).toEqual(["CONCURRENT_JOBS_EXCEEDED", "Created", "Created"])
        expect(statements).toBe(3)
        expect((yield* holdings([owner.id, other.id])).map(({ active, balance }) => [balance, active])).toEqual([[8_000, 2], [9_000, 1]])
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
