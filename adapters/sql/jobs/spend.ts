import { Effect, Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { ALL_DAYS } from "../migrations/0025_spend_daily.js"
import { hourOf, type SpendCounts } from "../../../src/domain/spend.js"
import { DbInt, decodeRows } from "../rows.js"
import type { Tables } from "../tables.js"

/** A rollup's key column for jobs without a key: '' rather than null, so it can sit in the primary key. */
export const NO_KEY = ""

export interface RollupRow {
  readonly accountId: string
  readonly keyId: string | null
  readonly model: string
  /** Any time in the rollup's hour. */
  readonly at: number
}

const decodeSpent = decodeRows(Schema.Array(Schema.Struct({ account_spent: DbInt, key_spent: DbInt })))

/** What a rollup's upsert binds: its row's key as stored (NO_KEY for no key, the hour) and the counts it adds. */
export interface RollupBinds {
  readonly accountId: string
  readonly keyId: string
  readonly model: string
  readonly hour: number
  readonly chargedMicroCents: number
  readonly refundedMicroCents: number
  readonly jobs: number
  readonly failed: number
  readonly cancelled: number
}

export const rollupBinds = (row: RollupRow, counts: SpendCounts): RollupBinds => ({
  accountId: row.accountId,
  keyId: row.keyId ?? NO_KEY,
  model: row.model,
  hour: hourOf(row.at),
  chargedMicroCents: counts.chargedMicroCents,
  refundedMicroCents: counts.refundedMicroCents,
  jobs: counts.jobs,
  failed: counts.failed,
  cancelled: counts.cancelled
})

/** Binds whose values may be columns of the statement's rows instead (a multi-row statement's). */
export type Placed<B> = { readonly [K in keyof B]: B[K] | Statement.Fragment }

/**
 * Adding a rollup's counts to it, creating it when missing. `source` is what the values are
 * selected from: the rows of a CTE (PostgreSQL's one statement charges only when its `account`
 * row came back), or nothing for a plain insert. (`WHERE true`: SQLite reads the ON of an
 * upsert after a bare SELECT as a join's.) Only places its values (compiledOnce.ts).
 */
export const rollupUpsertOf = (sql: SqlClient.SqlClient, t: Tables, b: Placed<RollupBinds>, source: Statement.Fragment) =>
  sql`INSERT INTO ${t.spend_hourly} AS s
      (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
    SELECT ${b.accountId}, ${b.keyId}, ${b.model}, ${b.hour}, ${b.chargedMicroCents},
      ${b.refundedMicroCents}, ${b.jobs}, ${b.failed}, ${b.cancelled} ${source} WHERE true
    ON CONFLICT (account_id, hour, key_id, model) DO UPDATE SET
      charged_micro_cents = s.charged_micro_cents + excluded.charged_micro_cents,
      refunded_micro_cents = s.refunded_micro_cents + excluded.refunded_micro_cents,
      jobs = s.jobs + excluded.jobs,
      failed = s.failed + excluded.failed,
      cancelled = s.cancelled + excluded.cancelled`

/** rollupUpsertOf for `counts` added to `row`'s rollup. */
export const rollupUpsert = (sql: SqlClient.SqlClient, t: Tables, row: RollupRow, counts: SpendCounts, source: Statement.Fragment) =>
  rollupUpsertOf(sql, t, rollupBinds(row, counts), source)

/**
 * The net spend (charges less refunds) of the account from `since.account`, and of its key from
 * `since.key`, from the daily totals (migration 0025): from 0, each key's total over every day;
 * otherwise the days from `since`, a UTC midnight (`periodStart`). 0 for what is not asked. Run
 * as a statement of its own after the charge took the account's lock, so on PostgreSQL it sees
 * every submit committed before.
 */
export const readSpent = (
  sql: SqlClient.SqlClient,
  t: Tables,
  accountId: string,
  keyId: string | null,
  since: { readonly account?: number | undefined; readonly key?: number | undefined }
) => {
  const spent = (from: number | undefined, ofKey: Statement.Fragment) =>
    from === undefined
      ? sql`0`
      : sql`(SELECT COALESCE(SUM(net_micro_cents), 0) FROM ${t.spend_daily} WHERE account_id = ${accountId} AND ${
        from === 0 ? sql`day = ${ALL_DAYS}` : sql`day >= ${from}`
      }${ofKey})`
  return sql`SELECT ${spent(since.account, sql``)} AS account_spent, ${spent(since.key, sql` AND key_id = ${keyId ?? NO_KEY}`)} AS key_spent`
    .pipe(
      Effect.flatMap(decodeSpent),
      Effect.map((rows) => ({
        accountSpent: since.account === undefined ? null : rows[0]?.account_spent ?? 0,
        keySpent: since.key === undefined ? null : rows[0]?.key_spent ?? 0
      }))
    )
}
