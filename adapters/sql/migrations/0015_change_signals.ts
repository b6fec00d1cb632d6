import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * PostgreSQL: triggers that NOTIFY `<prefix>changes` when what processes cache changes, so
 * every process drops its cached keys and accounts (payload `access`) or catalog (`catalog`)
 * within a notification's delay (adapters/sql/PgStoreChanges.ts). An account's balance and
 * active jobs move on every submit and are never trusted from a cache: only its settings notify.
 * SQLite has no signal between processes: its caches live 1 s (adapters/sql/layer.ts).
 */
/** The columns of accounts that a process caches with a key: all but the balance, the active jobs and what never changes. */
const ACCOUNT_SETTINGS = [
  "name",
  "max_concurrent_jobs",
  "segments",
  "allowed_models",
  "discounts",
  "webhook_secret",
  "previous_webhook_secret",
  "previous_webhook_secret_expires_at",
  "budget_limit_micro_cents",
  "budget_period"
]

export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        const notify = sql(`${t.prefix}notify_change`)
        // The prefix is checked to be a plain identifier (tablePrefix.ts): it can sit in a string literal.
        const channel = sql.literal(`'${t.prefix}changes'`)
        yield* sql`CREATE FUNCTION ${notify}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            PERFORM pg_notify(${channel}, TG_ARGV[0]);
            RETURN NULL;
          END $$`
        yield* sql`CREATE TRIGGER ${sql(`${t.prefix}api_keys_changed`)} AFTER UPDATE OR DELETE ON ${t.api_keys}
          FOR EACH STATEMENT EXECUTE FUNCTION ${notify}('access')`
        // By the columns an UPDATE sets, so a submit's (balance and active jobs) never even calls it.
        // A later migration adding a setting to accounts adds it here too.
        yield* sql`CREATE TRIGGER ${sql(`${t.prefix}accounts_changed`)} AFTER UPDATE OF ${sql.literal(ACCOUNT_SETTINGS.join(", "))}
          ON ${t.accounts} FOR EACH STATEMENT EXECUTE FUNCTION ${notify}('access')`
        yield* sql`CREATE TRIGGER ${sql(`${t.prefix}accounts_deleted`)} AFTER DELETE ON ${t.accounts}
          FOR EACH STATEMENT EXECUTE FUNCTION ${notify}('access')`
        yield* sql`CREATE TRIGGER ${sql(`${t.prefix}catalog_changed`)} AFTER INSERT OR UPDATE OR DELETE ON ${t.catalog}
          FOR EACH STATEMENT EXECUTE FUNCTION ${notify}('catalog')`
      }),
    orElse: () => Effect.void
  })
})
