import { Effect, Option, Schema } from "effect"
import type { Statement } from "effect/sql"
import { newLedgerEntryId } from "../../../src/domain/ids.js"
import { rollupChange } from "../../../src/domain/spend.js"
import type { Charged, JobCharge, JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import { forUpdateOf, type JobSql } from "../queue/context.js"
import { AccountRow, DbInt, decodeRows, storeErrors, toAccount } from "../rows.js"
import { readSpent, type RollupBinds, rollupBinds, rollupUpsert, rollupUpsertOf } from "./spend.js"

const decodeAccounts = decodeRows(Schema.Array(AccountRow))
const decodeBalance = decodeRows(Schema.Array(Schema.Struct({ before: DbInt })))

export const firstBalance = (rows: ReadonlyArray<unknown>) =>
  decodeBalance(rows).pipe(Effect.map((found) => Option.map(Option.fromNullishOr(found[0]), (row) => row.before)))

/** The spend rollup a charge adds to: its row's key and its counts. */
export const chargedRollup = ({ accountId, costMicroCents, keyId, model, now }: JobCharge) => ({
  row: { accountId, keyId, model, at: now },
  counts: rollupChange({ kind: "charge", amountMicroCents: costMicroCents })
})

/** What chargingPg binds, each value as it is bound. */
export interface ChargeBinds {
  readonly accountId: string
  readonly costMicroCents: number
  readonly ledgerId: string
  /** The ledger line's amount: the cost taken off. */
  readonly ledgerAmount: number
  readonly jobId: string
  readonly now: number
  readonly rollup: RollupBinds
}

export const chargeBinds = (charge: JobCharge): ChargeBinds => {
  const { counts, row } = chargedRollup(charge)
  return {
    accountId: charge.accountId,
    costMicroCents: charge.costMicroCents,
    ledgerId: newLedgerEntryId(charge.now),
    ledgerAmount: -charge.costMicroCents,
    jobId: charge.jobId,
    now: charge.now,
    rollup: rollupBinds(row, counts)
  }
}

/** The columns of chargingEachPg's `submitted`, with their types: a submit's ChargeBinds, flat, and its bound on active jobs. */
export const SUBMITTED_COLUMNS = `account_id text, cost_micro_cents bigint, max_concurrent_jobs bigint, ledger_id text,
  ledger_amount bigint, job_id text, now bigint, key_id text, model text, hour bigint, charged_micro_cents bigint,
  refunded_micro_cents bigint, jobs bigint, failed bigint, cancelled bigint`

/** One row of chargingEachPg's `submitted`, its keys the columns of SUBMITTED_COLUMNS. */
export const submittedRow = ({ accountId, costMicroCents, jobId, ledgerAmount, ledgerId, now, rollup }: ChargeBinds, maxConcurrentJobs: number) => ({
  account_id: accountId,
  cost_micro_cents: costMicroCents,
  max_concurrent_jobs: maxConcurrentJobs,
  ledger_id: ledgerId,
  ledger_amount: ledgerAmount,
  job_id: jobId,
  now,
  key_id: rollup.keyId,
  model: rollup.model,
  hour: rollup.hour,
  charged_micro_cents: rollup.chargedMicroCents,
  refunded_micro_cents: rollup.refundedMicroCents,
  jobs: rollup.jobs,
  failed: rollup.failed,
  cancelled: rollup.cancelled
})

/** Locking and charging an account. */
export const makeChargeStatements = ({ sql, t }: JobSql) => {
  /**
   * The start of a charging statement on PostgreSQL: the account's ended jobs are taken out of
   * `active_job_ends` (rows another statement is taking are skipped, so this never waits on
   * them), then the account is charged, and the ends folded into `active_jobs`, only when the
   * balance covers the cost and `admits` holds; refused, the ends go back. The charge's ledger
   * line is written when there is a cost, and its spend rollup always, after the account's row
   * (it selects from `account`), the order every writer takes them in. `account` answers the
   * balance before the charge.
   *
   * Ends written after the statement began are not seen, so `a.active_jobs - folded.n` can only
   * count too many active jobs, never too few. Nothing waits for an account's lock while holding
   * ends, so the two locks never deadlock.
   *
   * `countsItsJob`: the statement inserts one active job that the charge counts in the same write
   * of the account's row, the insert trigger skipping it (migration 0021). `account` answers the
   * account's fair_weight too, for the job's fair key. Only places its values (compiledOnce.ts).
   */
  const chargingPg = (charge: ChargeBinds, admits: Statement.Fragment, countsItsJob: boolean) => {
    const { accountId, costMicroCents, jobId, ledgerAmount, ledgerId, now, rollup } = charge
    return sql`ended AS (
        DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${t.active_job_ends} WHERE account_id = ${accountId} FOR UPDATE SKIP LOCKED
        )) RETURNING account_id
      ), folded AS (
        SELECT COUNT(*) AS n FROM ended
      ), account AS (
        UPDATE ${t.accounts} AS a SET balance_micro_cents = a.balance_micro_cents - ${costMicroCents},
          active_jobs = a.active_jobs - folded.n${countsItsJob ? sql` + 1` : sql``}
        FROM folded
        WHERE a.id = ${accountId} AND a.balance_micro_cents >= ${costMicroCents} ${admits}
        RETURNING a.id, a.balance_micro_cents + ${costMicroCents} AS before, a.fair_weight
      ), restored AS (
        INSERT INTO ${t.active_job_ends} (account_id) SELECT account_id FROM ended WHERE NOT EXISTS (SELECT 1 FROM account)
      ), line AS (
        INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
        SELECT ${ledgerId}, id, ${jobId}, 'charge', ${ledgerAmount}, ${now} FROM account WHERE ${costMicroCents}::bigint > 0
      ), rollup AS (
        ${rollupUpsertOf(sql, t, rollup, sql`FROM account`)}
      )`
  }

  /**
   * chargingPg for several submits of distinct accounts in one statement, each charged or refused
   * on its own: `submitted` is a relation of one row per submit, with the columns of
   * `SUBMITTED_COLUMNS` (a charge's binds, the account's bound on active jobs). Each charged
   * account counts the one job its submit inserts, as chargingPg's `countsItsJob`; `account`
   * answers the charged accounts with their fair_weight and the job each one's charge is for.
   * The same order of locks as chargingPg: ends skipped when locked, then each account's row,
   * then its ledger line and rollup. Two submits of one account must not share the statement
   * (an UPDATE moves a row once): the caller keeps them apart (statementBatches.ts).
   */
  const chargingEachPg = (submitted: Statement.Fragment) =>
    sql`ended AS (
        DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${t.active_job_ends} WHERE account_id IN (SELECT account_id FROM ${submitted}) FOR UPDATE SKIP LOCKED
        )) RETURNING account_id
      ), folded AS (
        SELECT s.account_id, COUNT(ended.account_id) AS n FROM ${submitted} s LEFT JOIN ended ON ended.account_id = s.account_id
        GROUP BY s.account_id
      ), account AS (
        UPDATE ${t.accounts} AS a SET balance_micro_cents = a.balance_micro_cents - s.cost_micro_cents,
          active_jobs = a.active_jobs - folded.n + 1
        FROM ${submitted} s JOIN folded ON folded.account_id = s.account_id
        WHERE a.id = s.account_id AND a.balance_micro_cents >= s.cost_micro_cents AND a.active_jobs - folded.n < s.max_concurrent_jobs
        RETURNING a.id, a.fair_weight, s.job_id
      ), restored AS (
        INSERT INTO ${t.active_job_ends} (account_id)
        SELECT account_id FROM ended WHERE NOT EXISTS (SELECT 1 FROM account WHERE account.id = ended.account_id)
      ), line AS (
        INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
        SELECT s.ledger_id, s.account_id, s.job_id, 'charge', s.ledger_amount, s.now
        FROM ${submitted} s JOIN account ON account.job_id = s.job_id WHERE s.cost_micro_cents > 0
      ), rollup AS (
        ${
      rollupUpsertOf(sql, t, {
        accountId: sql`s.account_id`,
        keyId: sql`s.key_id`,
        model: sql`s.model`,
        hour: sql`s.hour`,
        chargedMicroCents: sql`s.charged_micro_cents`,
        refundedMicroCents: sql`s.refunded_micro_cents`,
        jobs: sql`s.jobs`,
        failed: sql`s.failed`,
        cancelled: sql`s.cancelled`
      }, sql`FROM ${submitted} s JOIN account ON account.job_id = s.job_id`)
    }
      )`

  /**
   * SQLite's charge: the balance and the active jobs sit in the account's row, counted by triggers.
   * Its rows answer `before`, and `returning`'s columns (`, expression AS name`) read from the
   * charged row: the submit's fair key reads the account's weight there.
   */
  const chargeSqlite = (charge: JobCharge, admits: Statement.Fragment, returning: Statement.Fragment = sql``) => {
    const { accountId, costMicroCents, jobId, now } = charge
    const rollup = chargedRollup(charge)
    return sql`UPDATE ${t.accounts} SET balance_micro_cents = balance_micro_cents - ${costMicroCents}
      WHERE id = ${accountId} AND balance_micro_cents >= ${costMicroCents} ${admits}
      RETURNING balance_micro_cents + ${costMicroCents} AS before ${returning}`.pipe(
      Effect.tap((rows) =>
        rows.length === 0 ? Effect.void : Effect.andThen(
          costMicroCents > 0
            ? sql`INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
              VALUES (${newLedgerEntryId(now)}, ${accountId}, ${jobId}, 'charge', ${-costMicroCents}, ${now})`
            : Effect.void,
          rollupUpsert(sql, t, rollup.row, rollup.counts, sql``)
        )
      )
    )
  }

  /** The spend the charge asked for, read after it took the account's lock (a statement of its own). */
  const withSpend = (charge: JobCharge) => (before: Option.Option<number>) =>
    Option.isNone(before)
      ? Effect.succeed(Option.none<Charged>())
      : charge.spendSince === undefined
      ? Effect.succeed(Option.some<Charged>({ balanceBefore: before.value, accountSpent: null, keySpent: null }))
      : Effect.map(
        readSpent(sql, t, charge.accountId, charge.keyId, charge.spendSince),
        (spent) => Option.some<Charged>({ balanceBefore: before.value, ...spent })
      )

  const chargeAccount: JobStoreDriver["chargeAccount"] = sql.onDialectOrElse({
    // A free job moves no money, but its charge still takes the lock that serialises the account's submits.
    pg: () => (charge: JobCharge) =>
      sql`WITH ${chargingPg(chargeBinds(charge), sql``, false)} SELECT before FROM account`.pipe(
        Effect.flatMap(firstBalance),
        Effect.flatMap(withSpend(charge)),
        storeErrors("charge account")
      ),
    orElse: () => (charge: JobCharge) =>
      chargeSqlite(charge, sql``).pipe(Effect.flatMap(firstBalance), Effect.flatMap(withSpend(charge)), storeErrors("charge account"))
  })

  const forUpdate = forUpdateOf(sql)

  const lockAccount: JobStoreDriver["lockAccount"] = (id) =>
    sql`SELECT * FROM ${t.accounts} WHERE id = ${id} ${forUpdate}`.pipe(
      Effect.flatMap(decodeAccounts),
      Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toAccount)),
      storeErrors("lock account")
    )

  return { chargingPg, chargingEachPg, chargeSqlite, chargeAccount, lockAccount }
}
