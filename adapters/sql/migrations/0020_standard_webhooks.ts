import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The account setting `standardWebhooks` (0: off, 1: on; every account of earlier releases off).
 * On PostgreSQL a change of it notifies `<prefix>changes` as 0015's settings do, so processes
 * drop the account they cache; a trigger of its own rather than a replaced 0015 trigger, so
 * another migration adding a setting does not have to know this one.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.accounts} ADD COLUMN standard_webhooks INTEGER NOT NULL DEFAULT 0`
  yield* sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TRIGGER ${sql(`${t.prefix}accounts_standard_webhooks_changed`)} AFTER UPDATE OF standard_webhooks
        ON ${t.accounts} FOR EACH STATEMENT EXECUTE FUNCTION ${sql(`${t.prefix}notify_change`)}('access')`.pipe(Effect.asVoid),
    orElse: () => Effect.void
  })
})
