import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/** hourOf (src/domain/spend.ts) in SQL: the start of the UTC hour of an epoch-ms column. */
const hourOf = (column: string) => `(${column} - ${column} % 3600000)`

/**
 * Budgets on accounts and keys (both columns null: none), the key on each job (null for jobs of
 * earlier releases), and the spend rollups: per account, key ('' for none, so it can sit in the
 * primary key), model and UTC hour of the job's submit, what was charged and refunded and how
 * many jobs were submitted, failed and were cancelled. The job store keeps them in the same
 * statement or transaction as each ledger line (adapters/sql/ledger.ts, jobs/charge.ts), and
 * retention never deletes them.
 *
 * The rollups start from the ledger as it stands, so they sum to it from the first day: each
 * job's charge and refund, in the hour of its job's submit (of the line itself when retention
 * deleted the job, the model then ''), without a key.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of [t.accounts, t.api_keys]) {
    yield* sql`ALTER TABLE ${table} ADD COLUMN budget_limit_micro_cents BIGINT`
    yield* sql`ALTER TABLE ${table} ADD COLUMN budget_period TEXT`
  }
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN api_key_id TEXT`
  yield* sql`CREATE TABLE ${t.spend_hourly} (
    account_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    hour BIGINT NOT NULL,
    charged_micro_cents BIGINT NOT NULL,
    refunded_micro_cents BIGINT NOT NULL,
    jobs BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    cancelled BIGINT NOT NULL,
    PRIMARY KEY (account_id, hour, key_id, model)
  )`
  yield* sql`CREATE INDEX ${t.spend_hourly_hour} ON ${t.spend_hourly} (hour)`
  const hour = sql.literal(hourOf("COALESCE(j.created_at, l.created_at)"))
  yield* sql`INSERT INTO ${t.spend_hourly}
      (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
    SELECT l.account_id, '', COALESCE(j.model, ''), ${hour},
      SUM(CASE WHEN l.kind = 'charge' THEN -l.amount_micro_cents ELSE 0 END),
      SUM(CASE WHEN l.kind = 'refund' THEN l.amount_micro_cents ELSE 0 END),
      SUM(CASE WHEN l.kind = 'charge' THEN 1 ELSE 0 END),
      SUM(CASE WHEN l.kind = 'refund' AND j.status = 'failed' THEN 1 ELSE 0 END),
      SUM(CASE WHEN l.kind = 'refund' AND j.status = 'cancelled' THEN 1 ELSE 0 END)
    FROM ${t.ledger} l LEFT JOIN ${t.jobs} j ON j.id = l.job_id
    WHERE l.kind IN ('charge', 'refund')
    GROUP BY l.account_id, COALESCE(j.model, ''), ${hour}`
})
