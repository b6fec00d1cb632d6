import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schedule } from "effect"
import { layerPgSignals } from "../../adapters/sql/PgJobSignal.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { freshPostgresUrl, listening } from "../support/postgres.js"

const url = await freshPostgresUrl()

/** Checks `holds` every 20 ms until it does; fails after `ms` (well under the followers' 5 s re-read). */
const within = <E, R>(what: string, ms: number, holds: Effect.Effect<boolean, E, R>) =>
  holds.pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (held) => held }),
    Effect.timeoutOrElse({ duration: ms, orElse: () => Effect.fail(new Error(`${what}: not within ${ms} ms`)) })
  )

const reaches = (count: () => number, atLeast: number, ms: number) =>
  within(`${atLeast} hints (${count()} so far)`, ms, Effect.sync(() => count() >= atLeast))

if (url === undefined) {
  describe.skip("postgres: job events (server not reachable)", () => {
    it("hints followers across processes", () => undefined)
  })
} else {
  describe("postgres: job events over LISTEN/NOTIFY", () => {
    /** The test's own connection, to watch and cut the others. */
    const probe = PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })

    /** Each has its own pool and LISTEN connection, as separate processes would. */
    const oneProcess = () =>
      Layer.build(layerPgSignals({ url: Redacted.make(url) })).pipe(Effect.map((context) => Context.get(context, JobEvents)))

    /** Subscribes to `jobId`'s hints, counting them. */
    const counting = (events: JobEvents["Service"], jobId: string) =>
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
        yield* within("both processes listening", 5_000, listening(2))
        yield* publisher.publish(["job_a" as JobId])
        yield* reaches(followed, 1, 2_000)
        expect(other()).toBe(0)
        // The reaper's abandonments: every followed job.
        yield* publisher.publishAll
        yield* reaches(other, 1, 2_000)
        yield* reaches(followed, 2, 2_000)
      }).pipe(Effect.provide(probe), Effect.scoped))

    it.live("re-subscribes after its LISTEN connection is killed: a later change still arrives before the 5 s re-read", () =>
      Effect.gen(function*() {
        const follower = yield* oneProcess()
        const publisher = yield* oneProcess()
        const hints = yield* counting(follower, "job_a")
        yield* within("both processes listening", 5_000, listening(2))
        yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = 'genjobs listener' AND datname = current_database() AND pid <> pg_backend_pid()`)
        // Once back, each listener hints every follower once for what it may have missed meanwhile.
        yield* reaches(hints, 1, 3_000)
        yield* within("both processes listening again", 3_000, listening(2))
        const before = hints()
        yield* publisher.publish(["job_a" as JobId])
        yield* reaches(hints, before + 1, 2_000)
      }).pipe(Effect.provide(probe), Effect.scoped))
  })
}
