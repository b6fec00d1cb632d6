import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerAccounts } from "../../adapters/memory/MemoryAccounts.js"
import { memoryChangeFeed } from "../../adapters/memory/MemoryChanges.js"
import { memoryJobDriver } from "../../adapters/memory/MemoryJobs.js"
import { makeMemoryState } from "../../adapters/memory/state.js"
import { layerSqlStores } from "../../adapters/sql/layer.js"
import { makeSqlJobDriver } from "../../adapters/sql/SqlJobs.js"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { layerSqlTables } from "../../adapters/sql/tables.js"
import { type ChangeEntry, changeOf, FEED_START } from "../../src/domain/change.js"
import type { AccountId } from "../../src/domain/ids.js"
import type { Job, JobError } from "../../src/domain/job.js"
import type { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import type { HeldEnding, JobDrivers } from "../../src/ports/JobLeaseDriver.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

/** A store's account repository and changes feed, and its drivers built in the layer's context. */
type Env = AccountRepo | ChangeFeed
interface Store<R> {
  readonly layer: Layer.Layer<Env | R, unknown>
  readonly drivers: Effect.Effect<JobDrivers, unknown, R>
}

/** Entries of the account, polled for up to 30 s (PostgreSQL serves one once older transactions ended). */
const entriesOf = (accountId: AccountId, count: number) =>
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const deadline = Date.now() + 30_000
    for (;;) {
      const read = yield* feed.read({ accountId, after: FEED_START, upTo: undefined, limit: 100 })
      if (read.entries.length >= count || Date.now() > deadline) return read.entries
      yield* Effect.sleep("50 millis")
    }
  })

const withoutPosition = ({ position: _, ...change }: ChangeEntry) => change

/** `changeOf` of an ended job; a job without `completedAt` gets NaN, which no entry equals. */
const expectedEntries = (jobs: ReadonlyArray<Job>) => jobs.flatMap((j) => changeOf(j, j.completedAt ?? Number.NaN) ?? [])

/**
 * The entries an ending writes in its own statement (PostgreSQL: a CTE over `finishHeld`'s
 * UPDATE; SQLite: an INSERT ... SELECT after it) are `changeOf` of the jobs as written, the
 * memory store's definition: for every status and field the feed keeps.
 */
const run = <R>(name: string, makeStore: () => Store<R>) =>
  it.live(`${name}: finishHeld writes each ended job's entry as changeOf defines it`, () => {
    const store = makeStore()
    return Effect.scoped(Effect.gen(function*() {
      const drivers = yield* store.drivers
      const repo = yield* makeJobRepo(drivers)
      const owner = yield* createAccount(100_000)
      const costs = [1_000, 2_500, 0, 700, 300]
      const jobs: Array<Job> = []
      for (const [i, costMicroCents] of costs.entries()) {
        const j = job(owner.id, { costMicroCents, createdAt: T0 + i })
        yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
        jobs.push(j)
      }
      for (let i = 0; i < costs.length; i++) {
        expect(Option.isSome(yield* repo.claim({ workerId: "w", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3 }))).toBe(true)
      }
      const rejected: JobError = { code: "GENERATION_FAILED", message: "refused: \"quoted\" ✓", type: "input_rejected", retryable: false }
      const lost: JobError = { code: "INTERNAL_ERROR", message: "lease expired", type: "internal", retryable: true }
      const ending = (j: Job, rest: Omit<HeldEnding, "id" | "leaseOwner">, leaseOwner = "w"): HeldEnding => ({ id: j.id, leaseOwner, ...rest })
      const endings = [
        ending(jobs[0]!, { status: "completed", outputs: [{ url: "https://files.test/a.png", type: "image" }], error: null, completedAt: T0 + 100 }),
        ending(jobs[1]!, { status: "failed", outputs: null, error: rejected, completedAt: T0 + 200 }),
        ending(jobs[2]!, { status: "cancelled", outputs: null, error: null, completedAt: T0 + 300 }),
        ending(jobs[3]!, { status: "failed", outputs: null, error: lost, completedAt: T0 + 400 }),
        // Not this worker's lease: neither ended nor entered.
        ending(jobs[4]!, { status: "completed", outputs: [], error: null, completedAt: T0 + 500 }, "other")
      ]
      const written = yield* drivers.store.transaction(drivers.leases.finishHeld(endings))
      expect(written.map((j) => j.id).sort()).toEqual(jobs.slice(0, 4).map((j) => j.id).sort())

      const entries = yield* entriesOf(owner.id, 4)
      const byJob = (a: { readonly jobId: string }, b: { readonly jobId: string }) => a.jobId.localeCompare(b.jobId)
      expect(entries.map(withoutPosition).sort(byJob)).toEqual(expectedEntries(written).sort(byJob))
      // What a receiver relies on, spelled out.
      expect(entries.map((e) => [e.jobId, e.status, e.endedAt, e.costMicroCents, e.refundedMicroCents, e.error]).sort()).toEqual([
        [jobs[0]!.id, "completed", T0 + 100, 1_000, 0, null],
        [jobs[1]!.id, "failed", T0 + 200, 2_500, 2_500, rejected],
        [jobs[2]!.id, "cancelled", T0 + 300, 0, 0, null],
        [jobs[3]!.id, "failed", T0 + 400, 700, 700, lost]
      ].sort())
      expect(entries.every((e) => e.requestId !== undefined && e.model === "demo/text" && e.version === "v1")).toBe(true)
    })).pipe(Effect.provide(store.layer))
  })

/** The same through every ending path of the job rules: finishHeld's batch and updateJob's writes. */
const runPaths = <R>(name: string, makeStore: () => Store<R>) =>
  it.live(`${name}: every ending path's entry is changeOf of the job as it ended`, () => {
    const store = makeStore()
    return Effect.scoped(Effect.gen(function*() {
      const repo = yield* makeJobRepo(yield* store.drivers)
      const owner = yield* createAccount(100_000)
      const submit = (costMicroCents: number, i: number) =>
        Effect.gen(function*() {
          const j = job(owner.id, { costMicroCents, createdAt: T0 + i })
          yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
          return j
        })
      const claimed = (workerId: string, now: number, maxAttempts = 3) =>
        Effect.map(repo.claim({ workerId, now, leaseMs: 1_000, maxAttempts }), Option.getOrThrow)
      const completed = yield* submit(1_200, 0)
      yield* claimed("w1", T0 + 10)
      Option.getOrThrow(yield* repo.complete(completed.id, "w1", [{ url: "https://files.test/a.png", type: "image" }], T0 + 20))
      const failed = yield* submit(3_400, 1)
      yield* claimed("w2", T0 + 30)
      const error: JobError = { code: "GENERATION_FAILED", message: "refused", type: "input_rejected", retryable: false }
      Option.getOrThrow(yield* repo.fail(failed.id, "w2", error, T0 + 40))
      const cancelled = yield* submit(560, 2)
      yield* repo.cancel(cancelled.id, owner.id, T0 + 50)
      const abandoned = yield* submit(780, 3)
      yield* claimed("w3", T0 + 60, 1)
      expect(yield* repo.reap({ workerId: "r", now: T0 + 2_000, passMs: 5_000, maxAttempts: 1, limit: 10 })).toBe(1)

      const ended = yield* repo.getMany([completed.id, failed.id, cancelled.id, abandoned.id])
      const entries = yield* entriesOf(owner.id, 4)
      const byJob = (a: { readonly jobId: string }, b: { readonly jobId: string }) => a.jobId.localeCompare(b.jobId)
      expect(entries.map(withoutPosition).sort(byJob)).toEqual(expectedEntries(ended).sort(byJob))
      expect(entries.map((e) => [e.jobId, e.status, e.endedAt, e.refundedMicroCents, e.error?.code ?? null]).sort()).toEqual([
        [completed.id, "completed", T0 + 20, 0, null],
        [failed.id, "failed", T0 + 40, 3_400, "GENERATION_FAILED"],
        [cancelled.id, "cancelled", T0 + 50, 560, null],
        [abandoned.id, "failed", T0 + 2_000, 780, "INTERNAL_ERROR"]
      ].sort())
    })).pipe(Effect.provide(store.layer))
  })

const both = <R>(name: string, makeStore: () => Store<R>) => {
  run(name, makeStore)
  runPaths(name, makeStore)
}

describe("changes feed entries written with the ending", () => {
  both("memory", () => {
    const state = Effect.runSync(makeMemoryState)
    return {
      layer: Layer.merge(layerAccounts(state), Layer.succeed(ChangeFeed, memoryChangeFeed(state))),
      drivers: Effect.succeed(memoryJobDriver(state))
    }
  })

  const dir = mkdtempSync(join(tmpdir(), "genjobs-entries-"))
  let n = 0
  both("sqlite", () => sqlStore(SqliteClient.layer({ filename: join(dir, `store-${++n}.db`) })))
})

/** The SQL stores over `client`, and the job drivers on the same client. */
const sqlStore = (client: Layer.Layer<SqlClient.SqlClient, unknown>): Store<SqlClient.SqlClient> => ({
  layer: Layer.provideMerge(layerSqlStores({ databaseClock: false }), client),
  drivers: makeSqlJobDriver({ databaseClock: false }).pipe(Effect.provide(layerSqlTables()))
})

const url = await freshPostgresUrl()
if (url === undefined) {
  describe.skip("postgres: changes feed entries (server not reachable)", () => {
    it("writes entries in the ending's statement", () => undefined)
  })
} else {
  describe("postgres: changes feed entries written with the ending", () => {
    both("postgres", () => sqlStore(PgClient.layer({ url: Redacted.make(url) })))
  })
}
