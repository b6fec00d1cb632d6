import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { layerPgClientWithPoolUse } from "../../adapters/sql/pgPool.js"
import { layerPgJobSignal } from "../../adapters/sql/PgJobSignal.js"
import { jobsChannel, makeSqlJobDriver } from "../../adapters/sql/SqlJobs.js"
import { DEFAULT_TABLE_PREFIX, layerSqlTables, MAX_TABLE_PREFIX_LENGTH } from "../../adapters/sql/tables.js"
import type { LimitPlan } from "../../src/domain/providerLimits.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import { schemaNames } from "./schema.js"
import { runStoreConformance } from "./storeSuite.js"

const probe = await freshPostgresUrl()

if (probe === undefined) {
  describe.skip("postgres (server not reachable)", () => {
    it("runs the store conformance suite", () => undefined)
  })
} else {
  // A fresh database per test, so queue tests see only their own jobs. The suite's times are
  // its own (T0...), so leases follow them here; the database clock has its own tests below.
  /** A fresh store, leases on the suite's clock, beside a raw SQL client to read its tables. */
  const freshStoreWithSql = () =>
    Layer.unwrap(
      Effect.promise(freshPostgresUrl).pipe(Effect.map((url) =>
        Layer.merge(layerPostgres({ url: Redacted.make(url!), databaseClock: false }), PgClient.layer({ url: Redacted.make(url!) }))
      ))
    )

  // The suite's bursts (1,000 submits at once on one account) queue for the pool's 10 connections
  // longer than the 5 s a request waits by default before its 503; test/http/storeTimeout.test.ts checks that bound.
  runStoreConformance("postgres", () =>
    Layer.unwrap(
      Effect.promise(freshPostgresUrl).pipe(
        Effect.map((url) => layerPostgres({ url: Redacted.make(url!), databaseClock: false, storeTimeoutMs: 60_000 }))
      )
    ))

  describe("postgres: lease times from the database clock", () => {
    it.live("claims, renewals and expiry checks follow the server's clock, not the caller's", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* repo.submit({ job: j, maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
        const HOUR = 3_600_000
        // The claimer's clock is an hour behind: its lease still ends a minute from the server's now.
        const before = Date.now()
        const claimed = Option.getOrThrow(yield* repo.claim({ workerId: "w1", now: before - HOUR, leaseMs: 60_000, maxAttempts: 3 }))
        expect(claimed.leaseExpiresAt).toBeGreaterThanOrEqual(before + 60_000 - 1_000)
        expect(claimed.leaseExpiresAt).toBeLessThanOrEqual(Date.now() + 60_000 + 1_000)
        // A claimer whose clock runs an hour ahead does not take the lease over early.
        expect(Option.isNone(yield* repo.claim({ workerId: "w2", now: Date.now() + HOUR, leaseMs: 60_000, maxAttempts: 3 }))).toBe(true)
        // Renewed for half a second from the server's now, whatever the caller's clock says...
        expect(yield* repo.renewLeases([{ id: j.id, workerId: "w1" }], Date.now() + HOUR, 500)).toEqual([j.id])
        yield* Effect.sleep("800 millis")
        // ...so it has expired for a claimer whose own clock says it has an hour left.
        const taken = Option.getOrThrow(yield* repo.claim({ workerId: "w3", now: Date.now() - HOUR, leaseMs: 60_000, maxAttempts: 3 }))
        expect(taken).toMatchObject({ id: j.id, attempts: 2, leaseOwner: "w3" })
      }).pipe(Effect.provide(Layer.unwrap(
        Effect.promise(freshPostgresUrl).pipe(Effect.map((url) => layerPostgres({ url: Redacted.make(url!) })))
      ))))
  })

  describe("postgres: provider limits across processes", () => {
    it.live("limited claims of separate pools wait for each other, so their room is never counted twice", () =>
      Effect.gen(function*() {
        const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
        const plan: LimitPlan = { scopes: [{ key: "p", maxInFlight: 2 }], versions: [{ model: "demo/text", version: "v1", scopes: ["p"] }] }
        /** A process of its own: its own pool, and a pause between counting the room and taking jobs. */
        const processRepo = Effect.gen(function*() {
          const pool = yield* Layer.build(layerSqlTables().pipe(Layer.provideMerge(PgClient.layer({ url }))))
          const { leases, store } = yield* makeSqlJobDriver({ databaseClock: false }).pipe(Effect.provide(pool))
          return yield* makeJobRepo({
            store,
            leases: { ...leases, readLimitUsage: (...args) => Effect.tap(leases.readLimitUsage(...args), () => Effect.sleep("150 millis")) }
          })
        })
        yield* Effect.gen(function*() {
          const repo = yield* JobRepo
          const owner = yield* createAccount(100_000)
          for (let i = 0; i < 6; i++) yield* repo.submit({ job: job(owner.id, { createdAt: T0 + i }), maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
        }).pipe(Effect.provide(layerPostgres({ url, databaseClock: false })))
        const repos = yield* Effect.all(Array.from({ length: 3 }, () => processRepo))
        const claimed = yield* Effect.all(
          repos.map((repo, i) => repo.claimBatch({ workerId: `p${i}`, now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 5, limits: plan })),
          { concurrency: "unbounded" }
        )
        expect(claimed.flat()).toHaveLength(2)
      }).pipe(Effect.scoped))
  })

  describe("postgres: active jobs across processes", () => {
    it.live("submits and completions of separate pools never admit past the maximum, never deadlock, and leave the count exact", () =>
      Effect.gen(function*() {
        const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
        const MAX = 5
        const owner = yield* createAccount(1_000_000_000).pipe(Effect.provide(layerPostgres({ url, databaseClock: false })))
        const processRepo = Effect.gen(function*() {
          const pool = yield* Layer.build(layerSqlTables().pipe(Layer.provideMerge(PgClient.layer({ url }))))
          return yield* makeJobRepo(yield* makeSqlJobDriver({ databaseClock: false }).pipe(Effect.provide(pool)))
        })
        const repos = yield* Effect.all(Array.from({ length: 3 }, () => processRepo))
        const sql = (yield* Layer.build(PgClient.layer({ url }))).pipe(Context.get(SqlClient.SqlClient))
        const active = sql<{ n: bigint }>`SELECT COUNT(*) AS n FROM genjobs_jobs
          WHERE account_id = ${owner.id} AND status IN ('pending', 'processing')`.pipe(Effect.map((rows) => Number(rows[0]!.n)))
        let submitting = true
        const outcomes: Array<string> = []
        const submitter = (repo: JobRepo["Service"], lane: number) =>
          Effect.forEach(Array.from({ length: 25 }, (_, i) => i), (i) =>
            repo.submit({ job: job(owner.id, { createdAt: T0 + lane * 100 + i }), maxConcurrentJobs: MAX, rateLimits: NO_LIMITS }).pipe(
              Effect.match({ onFailure: (e) => ("code" in e ? String(e.code) : e._tag), onSuccess: (o) => o._tag }),
              Effect.map((outcome) => outcomes.push(outcome))
            ), { discard: true })
        // Claims and ends jobs while the submits run: a completion batch, a failure with its refund, a cancel.
        const completer = (repo: JobRepo["Service"], p: number) =>
          Effect.gen(function*() {
            for (let round = 0; submitting || (yield* active) > 0; round++) {
              const claimed = yield* repo.claimBatch({ workerId: `c${p}-${round}`, now: T0 + 10_000, leaseMs: 600_000, maxAttempts: 3, limit: 3 })
              yield* Effect.forEach(claimed, (j, i) =>
                i === 1
                  ? repo.fail(j.id, `c${p}-${round}`, { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 10_001)
                  : repo.complete(j.id, `c${p}-${round}`, [], T0 + 10_001), { concurrency: "unbounded", discard: true })
              const [pending] = yield* repo.list({ accountId: owner.id, limit: 1, status: "pending" })
              if (pending !== undefined && round % 4 === 0) yield* Effect.ignore(repo.cancel(pending.id, owner.id, T0 + 10_002))
              if (claimed.length === 0) yield* Effect.sleep("5 millis")
            }
          })
        const peaks: Array<number> = []
        const watcher = Effect.forever(Effect.flatMap(active, (n) => Effect.sync(() => peaks.push(n)))).pipe(Effect.forkChild)
        const watching = yield* watcher
        const completers = yield* Effect.forkChild(Effect.all(repos.map(completer), { concurrency: "unbounded" }))
        yield* Effect.all(repos.flatMap((repo, p) => [0, 1, 2].map((lane) => submitter(repo, p * 3 + lane))), { concurrency: "unbounded" })
        submitting = false
        yield* Fiber.join(completers)
        yield* Fiber.interrupt(watching)
        expect(new Set(outcomes)).toEqual(new Set(["Created", "CONCURRENT_JOBS_EXCEEDED"]))
        expect(outcomes.filter((o) => o === "Created").length).toBeGreaterThan(MAX)
        expect(Math.max(...peaks)).toBeLessThanOrEqual(MAX)
        // Nothing active is left, and the kept count agrees: its ends, folded or not, match what ended.
        const [kept] = yield* sql<{ n: bigint }>`SELECT active_jobs - (SELECT COUNT(*) FROM genjobs_active_job_ends WHERE account_id = ${owner.id}) AS n
          FROM genjobs_accounts WHERE id = ${owner.id}`
        expect(Number(kept!.n)).toBe(0)
        // SUM of a bigint is a numeric (read as a string), the balance a bigint: the sum is cast to compare them exactly.
        const [money] = yield* sql<{ balance: bigint; ledger: bigint }>`SELECT a.balance_micro_cents AS balance,
          (SELECT SUM(amount_micro_cents)::bigint FROM genjobs_ledger WHERE account_id = a.id) AS ledger FROM genjobs_accounts a WHERE a.id = ${owner.id}`
        expect(money!.balance).toBe(money!.ledger)
      }).pipe(Effect.scoped), 60_000)

    it.live("jobs a host inserts many at a time in one statement count for their accounts", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const sql = yield* SqlClient.SqlClient
        const [a, b] = [yield* createAccount(100_000), yield* createAccount(100_000)]
        const seedJob = job(a.id)
        yield* repo.submit({ job: seedJob, maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
        // Copies of the submitted job: 3 more for a, 2 for b, one of them already ended.
        yield* sql`INSERT INTO genjobs_jobs
          SELECT (r).* FROM (
            SELECT jsonb_populate_record(j, jsonb_build_object('id', 'job_copy_' || g, 'account_id', CASE WHEN g <= 3 THEN ${a.id} ELSE ${b.id} END,
              'status', CASE WHEN g = 6 THEN 'completed' ELSE 'pending' END)) AS r
            FROM genjobs_jobs j CROSS JOIN generate_series(1, 6) AS g WHERE j.id = ${seedJob.id}
          ) AS copies`
        const admit = (owner: typeof a, max: number) =>
          repo.submit({ job: job(owner.id), maxConcurrentJobs: max, rateLimits: NO_LIMITS }).pipe(
            Effect.match({ onFailure: (e) => ("code" in e ? String(e.code) : e._tag), onSuccess: (o) => o._tag })
          )
        expect([yield* admit(a, 4), yield* admit(a, 5), yield* admit(b, 2), yield* admit(b, 3)])
          .toEqual(["CONCURRENT_JOBS_EXCEEDED", "Created", "CONCURRENT_JOBS_EXCEEDED", "Created"])
      }).pipe(Effect.provide(freshStoreWithSql())))
  })

  describe("postgres: job ends of accounts that stopped submitting", () => {
    it.live("are folded into their counts by the reaper's pass, which every count read agrees with", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const accounts = yield* AccountRepo
        const sql = yield* SqlClient.SqlClient
        const owners = [yield* createAccount(100_000), yield* createAccount(100_000)]
        for (const owner of owners) {
          for (let i = 0; i < 3; i++) yield* repo.submit({ job: job(owner.id, { createdAt: T0 + i }), maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
        }
        const claimed = yield* repo.claimBatch({ workerId: "w", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: 5 })
        for (const j of claimed) yield* repo.complete(j.id, "w", [], T0 + 20)
        const ends = sql<{ n: bigint }>`SELECT COUNT(*) AS n FROM genjobs_active_job_ends`.pipe(Effect.map((rows) => Number(rows[0]!.n)))
        const counts = Effect.forEach(owners, (owner) => accounts.activeJobs(owner.id))
        expect(yield* ends).toBe(5)
        expect(yield* counts).toEqual([0, 1])
        expect(yield* repo.reap({ workerId: "r", now: T0 + 30, passMs: 10_000, maxAttempts: 3, limit: 10 })).toBe(0)
        expect(yield* ends).toBe(0)
        expect(yield* counts).toEqual([0, 1])
        const kept = yield* sql<{ n: string }>`SELECT active_jobs AS n FROM genjobs_accounts ORDER BY id`
        expect(kept.map((row) => Number(row.n)).sort()).toEqual([0, 1])
        // A pass that another process holds folds nothing.
        const more = Option.getOrThrow(yield* repo.claim({ workerId: "w2", now: T0 + 40, leaseMs: 60_000, maxAttempts: 3 }))
        yield* repo.complete(more.id, "w2", [], T0 + 50)
        expect(yield* repo.reap({ workerId: "other", now: T0 + 60, passMs: 10_000, maxAttempts: 3, limit: 10 })).toBe(0)
        expect(yield* ends).toBe(1)
        expect(yield* counts).toEqual([0, 0])
      }).pipe(Effect.provide(freshStoreWithSql())))
  })

  describe("postgres: the pool", () => {
    it.live("interrupting 10,000 queries that wait for a connection hands the connections over without overflowing the stack", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const waiting = yield* Effect.forEach(Array.from({ length: 10_000 }), () => Effect.forkChild(sql`SELECT pg_sleep(0.2)`))
        yield* Effect.sleep("50 millis")
        yield* Fiber.interruptAll(waiting)
        // The pool serves again once the sleeping queries end.
        expect(yield* sql<{ one: number }>`SELECT 1 AS one`).toEqual([{ one: 1 }])
      }).pipe(Effect.provide(layerPgClientWithPoolUse({ url: Redacted.make(probe), maxConnections: 4 }))))
  })

  describe("postgres: table prefix", () => {
    /** Every name in a fresh install, the prefix taken off. */
    const installedNames = (tablePrefix: string) =>
      Effect.gen(function*() {
        const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
        const names = yield* schemaNames.pipe(
          Effect.provide(Layer.merge(layerPostgres({ url, tablePrefix }), PgClient.layer({ url })))
        )
        return names.map((entry) => entry.replaceAll(tablePrefix, "<prefix>"))
      })

    it.live("the longest prefix allowed still fits every derived name in 63 characters", () =>
      Effect.gen(function*() {
        // PostgreSQL would truncate a longer name silently, and it would then differ from the default install's.
        const longest = `${"p".repeat(MAX_TABLE_PREFIX_LENGTH - 1)}_`
        expect(yield* installedNames(longest)).toEqual(yield* installedNames(DEFAULT_TABLE_PREFIX))
      }))
  })

  describe("postgres: JobSignal over LISTEN/NOTIFY", () => {
    /** Each signal has its own pool, as separate processes would. */
    const signal = (tablePrefix?: string) =>
      Layer.build(layerPgJobSignal({ url: Redacted.make(probe), tablePrefix })).pipe(
        Effect.map((context) => Context.get(context, JobSignal))
      )
    /** What the job store sends when a job commits (SqlJobs insertJob). */
    const jobQueued = (tablePrefix = DEFAULT_TABLE_PREFIX) =>
      Effect.flatMap(PgClient.PgClient, (sql) => sql`SELECT pg_notify(${jobsChannel(tablePrefix)}, 'jobs')`).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(probe), maxConnections: 1 }))
      )
    const waitedMs = (listener: JobSignal["Service"], maxMs: number) =>
      Effect.forkChild(Effect.map(Effect.timed(listener.wait(maxMs)), ([elapsed]) => Duration.toMillis(elapsed)))

    it.live("a job queued in one process wakes a waiter in another, one waiter per job", () =>
      Effect.gen(function*() {
        const listener = yield* signal()
        yield* Effect.sleep("300 millis")
        const first = yield* waitedMs(listener, 2_000)
        const second = yield* waitedMs(listener, 2_000)
        yield* Effect.sleep("100 millis")
        yield* jobQueued()
        expect(yield* Fiber.join(first)).toBeLessThan(1_000)
        expect(yield* Fiber.join(second)).toBeGreaterThanOrEqual(1_500)
      }).pipe(Effect.scoped))

    it.live("re-subscribes after its LISTEN connection is killed", () =>
      Effect.gen(function*() {
        const listener = yield* signal()
        yield* Effect.sleep("300 millis")
        yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = 'genjobs listener' AND datname = current_database()`).pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(probe), maxConnections: 1 }))
        )
        // Back within the first retries; it wakes its waiters once for what it may have missed.
        yield* Effect.sleep("1500 millis")
        yield* listener.wait(0)
        const waiting = yield* waitedMs(listener, 5_000)
        yield* Effect.sleep("100 millis")
        yield* jobQueued()
        expect(yield* Fiber.join(waiting)).toBeLessThan(2_000)
      }).pipe(Effect.scoped))

    it.live("engines with different table prefixes do not wake each other", () =>
      Effect.gen(function*() {
        const listener = yield* signal("genjobs_")
        yield* Effect.sleep("300 millis")
        const waiting = yield* waitedMs(listener, 1_000)
        yield* Effect.sleep("100 millis")
        yield* jobQueued("acme_")
        expect(yield* Fiber.join(waiting)).toBeGreaterThanOrEqual(990)
      }).pipe(Effect.scoped))

    it.live("refuses an invalid prefix", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(signal("Bad-Prefix"))
        expect(Exit.isFailure(exit) && Cause.findErrorOption(exit.cause)).toMatchObject({ value: { _tag: "TablePrefixError" } })
      }).pipe(Effect.scoped))

    it.live("wait gives up after its timeout when nothing is queued", () =>
      Effect.gen(function*() {
        const listener = yield* signal()
        const [elapsed] = yield* Effect.timed(listener.wait(300))
        expect(Duration.toMillis(elapsed)).toBeGreaterThanOrEqual(290)
      }).pipe(Effect.scoped))
  })
}
