import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createSubmitGate, type SpendCheck } from "./0016_submit_gate.js"
import type { Tables } from "../tables.js"

/** The `day` of a `spend_daily` row that holds the key's spend over every day: what a `total` budget reads. */
export const ALL_DAYS = -1

const DAY_MS = 86_400_000

/** The start of the UTC day of an epoch-ms column, in SQL (periodStart's `day`). */
const dayOf = (column: string) => `${column} - ${column} % ${DAY_MS}`

/** The net of a rollup row (charges less refunds), in SQL over `row` (NEW or OLD). */
const net = (row: string) => `${row}.charged_micro_cents - ${row}.refunded_micro_cents`

/**
 * What a budget reads: the net spend (charges less refunds) per account, key ('' for none) and UTC
 * day of the jobs' submits, and per account and key over every day (`day` = ALL_DAYS). A budget
 * read then takes one row per key for `total`, and at most one per day and key for `day` and
 * `month`. It summed every hourly rollup of the period before, every model and key, under the
 * account's lock: 10,440 rows late in a month for an account with 3 keys and 5 models, and every
 * rollup since the first for `total`.
 *
 * Kept by triggers on `spend_hourly`, so every writer of a rollup keeps it, whatever its release:
 * during a rolling upgrade the previous release's charges and refunds count in the budgets too. A
 * trigger fires only when a rollup's net moves (free jobs, and the counts of failed and cancelled
 * jobs, move none), and writes the totals' rows after the rollup's, which every writer takes
 * after the account's row (the lock that serialises its submits), so no new lock order appears.
 * Created before the rows are copied, in the migration's transaction: on PostgreSQL the trigger's
 * lock holds other processes' rollup writes until the copy is committed, and those writes then
 * fire it.
 *
 * PostgreSQL's submit gate (0016) reads these rows from now on, under its signature.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.spend_daily} (
    account_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    day BIGINT NOT NULL,
    net_micro_cents BIGINT NOT NULL,
    PRIMARY KEY (account_id, day, key_id)
  )`
  const day = sql.literal(dayOf("NEW.hour"))
  const upsert = (added: string) =>
    sql`INSERT INTO ${t.spend_daily} AS d (account_id, key_id, day, net_micro_cents)
      VALUES (NEW.account_id, NEW.key_id, ${day}, ${sql.literal(added)}),
        (NEW.account_id, NEW.key_id, ${sql.literal(String(ALL_DAYS))}, ${sql.literal(added)})
      ON CONFLICT (account_id, day, key_id) DO UPDATE SET net_micro_cents = d.net_micro_cents + excluded.net_micro_cents`
  const moved = sql.literal(`${net("NEW")} <> ${net("OLD")}`)
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql`CREATE FUNCTION ${t.add_daily_spend}() RETURNS trigger LANGUAGE plpgsql AS $$
          DECLARE
            added bigint := ${sql.literal(net("NEW"))};
          BEGIN
            IF TG_OP = 'UPDATE' THEN added := added - (${sql.literal(net("OLD"))}); END IF;
            ${upsert("added")};
            RETURN NULL;
          END $$`
        yield* sql`CREATE TRIGGER ${t.spend_daily_inserted} AFTER INSERT ON ${t.spend_hourly}
          FOR EACH ROW WHEN (NEW.charged_micro_cents <> NEW.refunded_micro_cents) EXECUTE FUNCTION ${t.add_daily_spend}()`
        yield* sql`CREATE TRIGGER ${t.spend_daily_updated} AFTER UPDATE ON ${t.spend_hourly}
          FOR EACH ROW WHEN (${moved}) EXECUTE FUNCTION ${t.add_daily_spend}()`
      }),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql`CREATE TRIGGER ${t.spend_daily_inserted} AFTER INSERT ON ${t.spend_hourly}
          WHEN NEW.charged_micro_cents <> NEW.refunded_micro_cents
          BEGIN ${upsert(net("NEW"))}; END`
        yield* sql`CREATE TRIGGER ${t.spend_daily_updated} AFTER UPDATE ON ${t.spend_hourly} WHEN ${moved}
          BEGIN ${upsert(`(${net("NEW")}) - (${net("OLD")})`)}; END`
      })
  })
  const rollupNet = sql.literal("SUM(charged_micro_cents - refunded_micro_cents)")
  const rollupDay = sql.literal(dayOf("hour"))
  yield* sql`INSERT INTO ${t.spend_daily} (account_id, key_id, day, net_micro_cents)
    SELECT account_id, key_id, ${rollupDay}, ${rollupNet} FROM ${t.spend_hourly} GROUP BY account_id, key_id, ${rollupDay}
    UNION ALL
    SELECT account_id, key_id, ${sql.literal(String(ALL_DAYS))}, ${rollupNet} FROM ${t.spend_hourly} GROUP BY account_id, key_id`
  yield* sql.onDialectOrElse({
    pg: () => createSubmitGate(sql, t, dailySpendCheck),
    orElse: () => Effect.void
  })
})

/**
 * The gate's spend block on the daily totals: a `total` budget (its period starts at 0) reads
 * each key's ALL_DAYS row, the others the days from their period's start (UTC midnights, as
 * `periodStart` gives them). Then the same comparisons as 0016's.
 */
const dailySpendCheck: SpendCheck = (sql, t, raise) => {
  const spent = (into: string, since: string, ofKey: string) =>
    sql`IF ${sql.literal(since)} = 0 THEN
              SELECT COALESCE(SUM(net_micro_cents), 0) INTO ${sql.literal(into)} FROM ${t.spend_daily}
                WHERE account_id = p_account_id AND day = ${sql.literal(String(ALL_DAYS))}${sql.literal(ofKey)};
            ELSIF ${sql.literal(since)} IS NOT NULL THEN
              SELECT COALESCE(SUM(net_micro_cents), 0) INTO ${sql.literal(into)} FROM ${t.spend_daily}
                WHERE account_id = p_account_id AND day >= ${sql.literal(since)}${sql.literal(ofKey)};
            END IF;`
  return sql`${spent("account_spent", "p_account_since", "")}
            ${spent("key_spent", "p_key_since", " AND key_id = p_key_id")}
            IF p_account_since IS NOT NULL AND account_spent > p_account_most THEN ${raise}; END IF;
            IF p_key_since IS NOT NULL AND key_spent > p_key_most THEN ${raise}; END IF;`
}
