import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Deferred, Effect, Layer, Redacted, Schedule } from "effect"
import type { HintInterestTimings } from "../../adapters/sql/pgHintInterest.js"
import { makePgSignals } from "../../adapters/sql/PgJobSignal.js"
import { makePgListener, PgListener } from "../../adapters/sql/pgListener.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { freshPostgresUrl, listening } from "../support/postgres.js"

const url = await freshPostgresUrl()

/** Short timings, so expiry shows within a test: believed for 3 x 300 ms, re-read 300 ms after a first follow. */
const FAST: HintInterestTimings = { heartbeat: "300 millis", settle: "300 millis", askGrace: "300 millis" }

/** Checks `holds` every 20 ms until it does; fails after `ms`. */
const within = <E, R>(what: string, ms: number, holds: Effect.Effect<boolean, E, R>) =>
  holds.pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (held) => held }),
    Effect.timeoutOrElse({ duration: ms, orElse: () => Effect.fail(new Error(`${what}: not within ${ms} ms`)) })
  )

if (url === undefined) {
  describe.skip("postgres: job-event hints only while someone follows (server not reachable)", () => {
    it("skips hints nobody follows", () => undefined)
  })
} else {
  describe("postgres: job-event hints only while someone follows", () => {
    const probe = PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })

    /** A process of its own: its pool (one connection, so its notifications keep their order) and its LISTEN connection. */
    const oneProcess = (timings: HintInterestTimings = FAST, clock?: Clock.Clock) =>
      Layer.build(
        Layer.effect(JobEvents, Effect.map(makePgSignals(undefined, timings), (signals) => signals.events)).pipe(
          Layer.provide(Layer.effect(PgListener, makePgListener)),
          Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
        )
      ).pipe(
        Effect.map((context) => Context.get(context, JobEvents)),
        (built) => (clock === undefined ? built : Effect.provideService(built, Clock.Clock, clock))
      )

    /** Every payload NOTIFYed on the default prefix's job-events channel, as a LISTEN connection of the test's own hears them. */
    const hintsSent = Effect.gen(function*() {
      const payloads: Array<string> = []
      const listener = yield* makePgListener
      const connected = yield* Deferred.make<void>()
      yield* listener.add({
        channels: ["genjobs_job_events"],
        onNotification: (_, payload) => Effect.sync(() => payloads.push(payload)),
        onConnected: () => Deferred.succeed(connected, undefined),
        onDropped: Effect.void
      })
      yield* Deferred.await(connected)
      return payloads
    })

    let round = 0
    /**
     * One claim's or ending's hint through `publisher`, then a cancel's (always sent) as a
     * marker: the publisher's one connection sends them in order, so once the marker is heard
     * the first was heard too, or never sent. Answers whether it was sent.
     */
    const sentIfFollowed = (publisher: JobEvents["Service"], payloads: Array<string>) =>
      Effect.gen(function*() {
        const n = ++round
        yield* publisher.publishIfFollowed([`claimed_${n}` as JobId])
        yield* publisher.publish([`marker_${n}` as JobId])
        yield* within("the marker", 2_000, Effect.sync(() => payloads.includes(`marker_${n}`)))
        return payloads.includes(`claimed_${n}`)
      })

    const eventually = (what: string, ms: number, sent: boolean, publisher: JobEvents["Service"], payloads: Array<string>) =>
      within(what, ms, Effect.map(sentIfFollowed(publisher, payloads), (was) => was === sent))

    it.live("with no follower anywhere no claim's or ending's hint is sent; a follower elsewhere gets them within the settle bound, until three heartbeats after it left", () =>
      Effect.gen(function*() {
        const payloads = yield* hintsSent
        const publisher = yield* oneProcess()
        const follower = yield* oneProcess()
        yield* within("both processes listening", 5_000, listening(2))
        // Past the ask's grace nobody has said it follows.
        yield* eventually("hints skipped", 3_000, false, publisher, payloads)
        for (let i = 0; i < 10; i++) expect(yield* sentIfFollowed(publisher, payloads)).toBe(false)

        // A follower arrives mid-drain: the next change of its job reaches it within the settle
        // bound (300 ms here; 1 s by default), by the hint or by the re-read it makes then.
        const heard: Array<string> = []
        yield* follower.subscribeAll((jobId) => heard.push(jobId ?? "*"))
        const unfollow = follower.follow()
        const started = Date.now()
        yield* publisher.publishIfFollowed(["job_a" as JobId])
        yield* within("the follower hears of job_a", 300 + 700, Effect.sync(() => heard.includes("job_a") || heard.includes("*")))
        expect(Date.now() - started).toBeLessThan(1_000)
        // From then on each claim's and ending's hint is sent, and reaches it.
        yield* eventually("hints sent", 2_000, true, publisher, payloads)
        yield* publisher.publishIfFollowed(["job_b" as JobId])
        yield* within("the follower hears of job_b", 1_000, Effect.sync(() => heard.includes("job_b")))
        // Its heartbeats keep the interest past the three heartbeats one announcement is believed.
        yield* Effect.sleep("1500 millis")
        expect(yield* sentIfFollowed(publisher, payloads)).toBe(true)

        // It leaves: once its last announcement is past (3 x 300 ms), nothing is sent again.
        unfollow()
        yield* eventually("hints skipped after the follower left", 900 + 1_500, false, publisher, payloads)
      }).pipe(Effect.provide(probe), Effect.scoped))

    it.live("a process that starts after the follower learns of it by asking, long before the next heartbeat; the follower re-reads once after answering", () =>
      Effect.gen(function*() {
        const payloads = yield* hintsSent
        // One heartbeat a minute: only its answer to the newcomer's ask can tell the newcomer.
        const follower = yield* oneProcess({ heartbeat: "60 seconds", settle: "100 millis", askGrace: "100 millis" })
        const unfollow = follower.follow()
        let rereads = 0
        yield* follower.subscribeAll((jobId) => void (jobId === undefined && rereads++))
        yield* within("the follower listening", 5_000, listening(1))
        // Its own first re-read, 100 ms after its first announcement (it does not answer its own ask).
        yield* within("the follower's first re-read", 2_000, Effect.sync(() => rereads === 1))
        yield* Effect.sleep("300 millis")
        expect(rereads).toBe(1)
        const publisher = yield* oneProcess({ heartbeat: "60 seconds", settle: "100 millis", askGrace: "100 millis" })
        yield* within("both processes listening", 5_000, listening(2))
        // Well past the newcomer's grace of sending everything.
        yield* Effect.sleep("500 millis")
        expect(yield* sentIfFollowed(publisher, payloads)).toBe(true)
        // Hints the newcomer skipped before the answer reached it are covered by a re-read after answering.
        yield* within("the follower re-read after answering", 2_000, Effect.sync(() => rereads >= 2))
        unfollow()
      }).pipe(Effect.provide(probe), Effect.scoped))

    it.live("an announcement is believed for three heartbeats of the publisher's own Clock", () =>
      Effect.gen(function*() {
        const payloads = yield* hintsSent
        // The publisher's clock: the real one, moved ahead at will (its sleeps stay real).
        const real = yield* Clock.Clock
        let ahead = 0
        const moved: Clock.Clock = {
          currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe() + ahead,
          currentTimeMillis: Effect.sync(() => real.currentTimeMillisUnsafe() + ahead),
          currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe() + BigInt(ahead) * 1_000_000n,
          currentTimeNanos: Effect.sync(() => real.currentTimeNanosUnsafe() + BigInt(ahead) * 1_000_000n),
          monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
          monotonicTimeNanos: real.monotonicTimeNanos,
          sleep: (duration) => real.sleep(duration)
        }
        // One heartbeat a minute: in real time the follower's announcement is believed for three minutes.
        const slow: HintInterestTimings = { heartbeat: "60 seconds", settle: "100 millis", askGrace: "100 millis" }
        const publisher = yield* oneProcess(slow, moved)
        const follower = yield* oneProcess(slow)
        yield* within("both processes listening", 5_000, listening(2))
        yield* eventually("hints skipped", 3_000, false, publisher, payloads)
        const unfollow = follower.follow()
        yield* eventually("hints sent", 2_000, true, publisher, payloads)
        unfollow()
        // Three heartbeats later on the publisher's clock the announcement is over.
        ahead = 3 * 60_000 + 1
        expect(yield* sentIfFollowed(publisher, payloads)).toBe(false)
      }).pipe(Effect.provide(probe), Effect.scoped))

    it.live("hints of any number of jobs go in one statement text", () =>
      Effect.gen(function*() {
        const payloads = yield* hintsSent
        const publisher = yield* oneProcess()
        yield* within("listening", 5_000, listening(1))
        const sql = yield* PgClient.PgClient
        const lastHintStatement = () =>
          sql<{ query: string }>`SELECT query FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'SELECT pg_notify(%FROM%'`
        yield* publisher.publish(["one" as JobId])
        yield* publisher.publish(["two" as JobId, "three" as JobId, "four" as JobId])
        yield* within("four hints", 2_000, Effect.sync(() => ["one", "two", "three", "four"].every((id) => payloads.includes(id))))
        // The publisher's one connection last ran the three-id statement: the channel and one array, two parameters.
        const rows = yield* lastHintStatement()
        expect(rows.length).toBe(1)
        expect(rows[0]!.query).toContain("$2")
        expect(rows[0]!.query).not.toContain("$3")
      }).pipe(Effect.provide(probe), Effect.scoped))
  })
}
