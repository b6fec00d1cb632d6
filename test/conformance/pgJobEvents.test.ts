import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { layerPgSignals } from "../../adapters/sql/PgJobSignal.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { freshPostgresUrl } from "../support/postgres.js"

const url = await freshPostgresUrl()

/** Polls `count` until it reaches `atLeast`; fails after `ms` (well under the followers' 5 s re-read). */
const reaches = (count: () => number, atLeast: number, ms: number) =>
  Effect.gen(function*() {
    for (let waited = 0; count() < atLeast; waited += 20) {
      if (waited >= ms) return yield* Effect.fail(new Error(`${count()} hints after ${ms} ms, expected ${atLeast}`))
      yield* Effect.sleep("20 millis")
    }
  })

if (url === undefined) {
  describe.skip("postgres: job events (server not reachable)", () => {
    it("hints followers across processes", () => undefined)
  })
} else {
  describe("postgres: job events over LISTEN/NOTIFY", () => {
    /** Each has its own pool and LISTEN connection, as separate processes would. */
    const oneProcess = () =>
      Layer.build(layerPgSignals({ url: Redacted.make(url) })).pipe(Effect.map((context) => Context.get(context, JobEvents)))

    /** Subscribes to `jobId`'s hints, counting them. */
    const counting = (events: JobEvents["Type"], jobId: string) =>
      Effect.gen(function*() {
        let hints = 0
        yield* events.subscribe(jobId as JobId, () => hints++)
        return () => hints
      })

    it.live("a change published in one process hints the job's followers in another, and only them", () =>
      Effect.gen(function*() {
        const follower = yield* oneProcess()
        const publisher = yield* oneProcess()
        const followed = yield* counting(follower, "job_a")
        const other = yield* counting(follower, "job_b")
        yield* Effect.sleep("300 millis")
        yield* publisher.publish(["job_a" as JobId])
        yield* reaches(followed, 1, 2_000)
        expect(other()).toBe(0)
        // The reaper's abandonments: every followed job.
        yield* publisher.publishAll
        yield* reaches(other, 1, 2_000)
        yield* reaches(followed, 2, 2_000)
      }).pipe(Effect.scoped))

    it.live("re-subscribes after its LISTEN connection is killed: a later change still arrives before the 5 s re-read", () =>
      Effect.gen(function*() {
        const follower = yield* oneProcess()
        const publisher = yield* oneProcess()
        const hints = yield* counting(follower, "job_a")
        yield* Effect.sleep("300 millis")
        yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = 'genjobs listener' AND datname = current_database() AND pid <> pg_backend_pid()`).pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
        )
        // Once back, each listener hints every follower once for what it may have missed meanwhile.
        yield* reaches(hints, 1, 3_000)
        const before = hints()
        yield* Effect.sleep("100 millis")
        yield* publisher.publish(["job_a" as JobId])
        yield* reaches(hints, before + 1, 2_000)
      }).pipe(Effect.scoped))
  })
}
