import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { type ChangeEntry, type ChangePosition, comparePositions, FEED_START, nextAfter } from "../../src/domain/change.js"
import type { AccountId, JobId } from "../../src/domain/ids.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const pgUp = await postgresAvailable()

/** A reader following one account's feed as a client does: pages of `limit` from its cursor. */
const makeReader = (feed: ChangeFeed["Service"], accountId: AccountId, limit: number) => {
  const seen: Array<ChangeEntry> = []
  let after: ChangePosition = FEED_START
  const page = Effect.gen(function*() {
    const read = yield* feed.read({ accountId, after, upTo: undefined, limit })
    seen.push(...read.entries)
    after = nextAfter(after, read, limit)
    return read.entries.length
  })
  return { seen, page }
}

/**
 * Pages until `count` entries were seen: an entry is served once every older transaction of the
 * server has ended, so other suites' transactions on a shared server can delay it (never lose it).
 */
const readUp = (reader: ReturnType<typeof makeReader>, count: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    while (reader.seen.length < count && Date.now() < deadline) {
      if ((yield* reader.page) === 0) yield* Effect.sleep("50 millis")
    }
  })

/** One engine's writer: submits jobs and ends each, by cancelling it or by a claim and completion. */
const writer = (repo: JobRepo["Service"], accountId: AccountId, name: string, count: number, ended: Set<JobId>) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      const j = job(accountId, { createdAt: T0 + i })
      yield* repo.submit({ job: j, maxConcurrentJobs: 10_000, rateLimits: NO_LIMITS })
      if (i % 2 === 0) {
        // Refused when another writer's claim took the job first: that writer ends it.
        const cancelled = yield* Effect.result(repo.cancel(j.id, accountId, T0 + 1_000 + i))
        if (cancelled._tag === "Success") ended.add(j.id)
      } else {
        // Claims the oldest pending job, perhaps another writer's: that one then ends here.
        const claimed = yield* repo.claim({ workerId: name, now: T0 + i, leaseMs: 600_000, maxAttempts: 3 })
        if (Option.isSome(claimed)) {
          yield* repo.complete(claimed.value.id, name, [], T0 + 1_000 + i)
          ended.add(claimed.value.id)
        }
      }
    }
  })

if (!pgUp) {
  describe.skip("postgres changes feed under concurrent writers (server not reachable)", () => {
    it("serves every ending once", () => undefined)
  })
} else {
  describe("postgres changes feed: two processes committing endings while a reader pages", () => {
    it.live("an ending committed late behind a later one is served, once, after it: never behind the cursor", () =>
      Effect.gen(function*() {
        const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
        // Two engines' stores on one database, each with its own pool, and a third client.
        const one = yield* Layer.build(layerPostgres({ url, databaseClock: false }))
        const two = yield* Layer.build(layerPostgres({ url, databaseClock: false }))
        const raw = Context.get(yield* Layer.build(PgClient.layer({ url })), SqlClient.SqlClient)
        const repos = [Context.get(one, JobRepo), Context.get(two, JobRepo)] as const
        const owner = yield* createAccount(100_000_000).pipe(Effect.provide(one))
        const reader = makeReader(Context.get(one, ChangeFeed), owner.id, 7)
        const ended = new Set<JobId>()

        // An ending's transaction that drew its id first and commits last: a raw writer's entry,
        // its transaction held open while both engines commit theirs.
        const written = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const held = yield* raw.withTransaction(Effect.gen(function*() {
          yield* raw`INSERT INTO genjobs_job_changes (account_id, job_id, request_id, status, model, version, ended_at,
            cost_micro_cents, refunded_micro_cents, error)
            VALUES (${owner.id}, 'job_held', 'req_held', 'cancelled', 'demo/text', 'v1', ${T0}, 0, 0, NULL)`
          yield* Deferred.succeed(written, undefined)
          yield* Deferred.await(release)
        })).pipe(Effect.forkScoped)
        yield* Deferred.await(written)
        ended.add("job_held" as JobId)

        yield* Effect.all([writer(repos[0], owner.id, "a", 10, ended), writer(repos[1], owner.id, "b", 10, ended)], {
          concurrency: "unbounded"
        })
        // Committed after the held entry was written: none is served while it is open.
        expect(yield* reader.page).toBe(0)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(held)
        yield* readUp(reader, ended.size)
        expect(reader.seen[0]!.jobId).toBe("job_held")
        expect(new Set(reader.seen.map((e) => e.jobId))).toEqual(ended)
        expect(reader.seen).toHaveLength(ended.size)
      }).pipe(Effect.scoped), { timeout: 120_000 })

    it.live("writers in both processes and a paging reader at once: every ending appears exactly once, in one order", () =>
      Effect.gen(function*() {
        const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
        const one = yield* Layer.build(layerPostgres({ url, databaseClock: false }))
        const two = yield* Layer.build(layerPostgres({ url, databaseClock: false }))
        const repos = [Context.get(one, JobRepo), Context.get(two, JobRepo)] as const
        const owner = yield* createAccount(100_000_000).pipe(Effect.provide(one))
        // Each process's reader, as two clients would follow the same account.
        const readers = [makeReader(Context.get(one, ChangeFeed), owner.id, 5), makeReader(Context.get(two, ChangeFeed), owner.id, 3)]
        const ended = new Set<JobId>()
        let writing = true
        const following = Effect.forEach(readers, (reader) =>
          Effect.gen(function*() {
            while (writing) yield* reader.page
          }), { concurrency: "unbounded", discard: true }).pipe(Effect.forkScoped)
        const readersFiber = yield* following
        yield* Effect.all(
          [0, 1, 2, 3].map((i) => writer(repos[i % 2]!, owner.id, `w${i}`, 40, ended)),
          { concurrency: "unbounded" }
        ).pipe(Effect.ensuring(Effect.sync(() => {
          writing = false
        })))
        yield* Fiber.join(readersFiber)
        // Jobs left pending (claimed by none) never ended and are in no page.
        for (const reader of readers) yield* readUp(reader, ended.size)
        const endedIds = [...ended]
        expect(endedIds.length).toBeGreaterThan(100)
        for (const reader of readers) {
          expect(reader.seen.map((e) => e.jobId).sort()).toEqual(endedIds.sort())
          for (let i = 1; i < reader.seen.length; i++) {
            expect(comparePositions(reader.seen[i - 1]!.position, reader.seen[i]!.position)).toBeLessThan(0)
          }
        }
        // Both clients saw one order.
        expect(readers[0]!.seen.map((e) => e.jobId)).toEqual(readers[1]!.seen.map((e) => e.jobId))
      }).pipe(Effect.scoped), { timeout: 120_000 })
  })
}
