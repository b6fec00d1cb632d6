import { PgClient, PgConnection } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Queue, Redacted } from "effect"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { DEFAULT_TABLE_PREFIX } from "../../adapters/sql/tables.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { createAccount } from "./fixtures.js"

const url = await freshPostgresUrl()

// Migration 0020's trigger: a change of the setting, by whatever process or statement, tells every
// process to drop its cached accounts. A raw UPDATE, so no announcement of the engine's own counts.
describe.skipIf(url === undefined)("postgres: standardWebhooks changes notify", () => {
  it.live("an UPDATE of standard_webhooks sends `access` on <prefix>changes", () =>
    Effect.gen(function*() {
      const owner = yield* createAccount(0)
      const sql = yield* PgClient.PgClient
      const session = yield* PgConnection.make({ url: Redacted.make(url!) })
      const changes = yield* (yield* session.pin).listen(`${DEFAULT_TABLE_PREFIX}changes`)
      const next = Queue.take(changes).pipe(Effect.timeout(Duration.seconds(5)), Effect.map((n) => n.payload))
      const accounts = sql(`${DEFAULT_TABLE_PREFIX}accounts`)
      yield* sql`UPDATE ${accounts} SET standard_webhooks = 1 WHERE id = ${owner.id}`
      expect(yield* next).toBe("access")
      yield* sql`UPDATE ${accounts} SET standard_webhooks = 0 WHERE id = ${owner.id}`
      expect(yield* next).toBe("access")
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.merge(layerPostgres({ url: Redacted.make(url!) }), PgClient.layer({ url: Redacted.make(url!) })))
    ))
})
