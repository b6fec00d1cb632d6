import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { describe, expect, it } from "vitest"
import { layerPgListener, PgListener } from "../../adapters/sql/pgListener.js"
import { postgresStore } from "../../adapters/sql/postgres.js"
import { freshPostgresUrl } from "../support/postgres.js"

const url = await freshPostgresUrl()

/** Checks `holds` every 20 ms until it does; fails after `ms`. */
const within = <E, R>(what: string, ms: number, holds: Effect.Effect<boolean, E, R>) =>
  holds.pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (held) => held }),
    Effect.timeoutOrElse({ duration: ms, orElse: () => Effect.fail(new Error(`${what}: not within ${ms} ms`)) })
  )

/** What one user of the connection heard, in order. */
const recorder = (channel: string) => {
  const heard: Array<string> = []
  const user = {
    channels: [channel],
    onNotification: (ch: string, payload: string) => Effect.sync(() => void heard.push(`${ch}:${payload}`)),
    onConnected: (reconnected: boolean) => Effect.sync(() => void heard.push(reconnected ? "reconnected" : "connected")),
    onDropped: Effect.sync(() => void heard.push("dropped"))
  }
  return { user, heard }
}

describe.skipIf(url === undefined)("postgres: one LISTEN connection per process, shared", () => {
  const client = () => PgClient.layer({ url: Redacted.make(url!), maxConnections: 1 })
  const sql = <A>(run: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) => Effect.flatMap(PgClient.PgClient, run)
  const listeners = sql((q) =>
    q<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = 'genjobs listener' AND datname = current_database()`
  ).pipe(Effect.map(([row]) => row!.n))
  const notify = (channel: string, payload: string) => sql((q) => q`SELECT pg_notify(${channel}, ${payload})`)

  it("carries every user's channels on one connection, each user hearing its own, and re-listens them all after a drop", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const hub = yield* PgListener
      const a = recorder("t_a")
      const b = recorder("t_b")
      yield* hub.add(a.user)
      yield* within("a connected", 5_000, Effect.sync(() => a.heard.includes("connected")))
      // Added while the connection is up: LISTENed on it at once.
      yield* hub.add(b.user)
      yield* within("b connected", 5_000, Effect.sync(() => b.heard.includes("connected")))
      expect(yield* listeners).toBe(1)

      yield* notify("t_a", "1")
      yield* notify("t_b", "2")
      yield* within("both heard", 5_000, Effect.sync(() => a.heard.includes("t_a:1") && b.heard.includes("t_b:2")))
      expect(a.heard).toEqual(["connected", "t_a:1"])
      expect(b.heard).toEqual(["connected", "t_b:2"])

      yield* sql((q) =>
        q`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'genjobs listener' AND datname = current_database()`
      )
      yield* within("both back", 5_000, Effect.sync(() => a.heard.includes("reconnected") && b.heard.includes("reconnected")))
      yield* notify("t_a", "3")
      yield* notify("t_b", "4")
      yield* within("both heard again", 5_000, Effect.sync(() => a.heard.includes("t_a:3") && b.heard.includes("t_b:4")))
      expect(a.heard).toEqual(["connected", "t_a:1", "dropped", "reconnected", "t_a:3"])
      expect(b.heard).toEqual(["connected", "t_b:2", "dropped", "reconnected", "t_b:4"])
      expect(yield* listeners).toBe(1)
    })).pipe(Effect.provide(Layer.provideMerge(layerPgListener, client())))), 30_000)

  it("is the only LISTEN connection of a process built with postgresStore (signals and the stores' change hints)", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* Layer.build(postgresStore({ url: url!, maxConnections: 2 }))
      // Both users LISTEN: the job events' and the stores' changes' channels on one connection.
      const channels = sql((q) =>
        q<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE 'genjobs %'`
      ).pipe(Effect.map(([row]) => row!.n))
      yield* within("the listener up", 10_000, Effect.map(listeners, (n) => n === 1))
      expect(yield* channels).toBe(1)
    })).pipe(Effect.provide(client()))), 30_000)
})
