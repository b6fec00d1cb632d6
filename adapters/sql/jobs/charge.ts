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

/** The columns of chargingEachPg's `submitted`, with their types: its place, a submit's ChargeBinds, flat, and its bound on active jobs. */
export const SUBMITTED_COLUMNS = `seq bigint, account_id text, cost_micro_cents bigint, max_concurrent_jobs bigint, ledger_id text,
  ledger_amount bigint, job_id text, now bigint, key_id text, model text, hour bigint, charged_micro_cents bigint,
  refunded_micro_cents bigint, jobs bigint, failed bigint, cancelled bigint`

/** One row of chargingEachPg's `submitted`, its keys the columns of SUBMITTED_COLUMNS. */
export const submittedRow = (
  seq: number,
  { accountId, costMicroCents, jobId, ledgerAmount, ledgerId, now, rollup }: ChargeBinds,
  maxConcurrentJobs: number
) => ({
  seq,
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

  /** The rollup row a batch statement upserts, read from the columns of `SUBMITTED_COLUMNS` under `alias`. */
  const rollupOf = (alias: Statement.Fragment) => ({
    accountId: sql`${alias}.account_id`,
    keyId: sql`${alias}.key_id`,
    model: sql`${alias}.model`,
    hour: sql`${alias}.hour`,
    chargedMicroCents: sql`${alias}.charged_micro_cents`,
    refundedMicroCents: sql`${alias}.refunded_micro_cents`,
    jobs: sql`${alias}.jobs`,
    failed: sql`${alias}.failed`,
    cancelled: sql`${alias}.cancelled`
  })

  /**
   * The batch statements' ends of their accounts' jobs, folded as chargingPg folds them (skipped
   * when locked), and given back where no account of theirs was charged (`account` answers those
   * that were).
   */
  const endsOf = (submitted: Statement.Fragment) =>
    sql`ended AS (
        DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${t.active_job_ends} WHERE account_id IN (SELECT account_id FROM ${submitted}) FOR UPDATE SKIP LOCKED
        )) RETURNING account_id
      )`
  const restoredEnds = sql`restored AS (
        INSERT INTO ${t.active_job_ends} (account_id)
        SELECT account_id FROM ended WHERE NOT EXISTS (SELECT 1 FROM account WHERE account.id = ended.account_id)
      )`

  /**
   * chargingPg for several submits in one statement, each charged or refused as it would be alone
   * in the order given: `submitted` is a relation of one row per submit, with the columns of
   * `SUBMITTED_COLUMNS` (a charge's binds, the account's bound on active jobs, `seq` its place).
   * Submits of one account share the statement (one account's 8 clients sent a statement each,
   * waiting on its row in turn: 430 µs of the database per submit against 168 over 8 accounts):
   * `locked` takes each account's row in the accounts' order, whatever the order of the submits,
   * so two statements that share accounts lock them in one order and never deadlock; FOR UPDATE
   * answers the row as the last writer left it. `judged` admits each account's longest run of
   * submits, in `seq` order, whose summed cost the balance covers and whose count the bound
   * allows: the submit that ends the run is refused as it would be alone after them, and those
   * after it are not decided (`considered` false), since a cheaper one might still pass: the
   * caller writes them again. The account's row is written once (an UPDATE moves a row once),
   * counting the jobs its submits insert, as chargingPg's `countsItsJob`; `account` answers the
   * charged accounts. Then the ledger lines, and the rollups summed per row (an upsert, too,
   * moves a row once), after the account's row as in chargingPg.
   */
  const chargingEachPg = (submitted: Statement.Fragment) =>
    sql`${endsOf(submitted)}, folded AS (
        SELECT s.account_id, COUNT(ended.account_id) AS n FROM (SELECT DISTINCT account_id FROM ${submitted}) s
        LEFT JOIN ended ON ended.account_id = s.account_id GROUP BY s.account_id
      ), locked AS (
        SELECT a.id, a.balance_micro_cents AS balance, a.active_jobs - folded.n AS active, a.fair_weight
        FROM ${t.accounts} AS a JOIN folded ON folded.account_id = a.id ORDER BY a.id FOR UPDATE OF a
      ), ranked AS (
        SELECT s.*, l.fair_weight, ROW_NUMBER() OVER w AS k,
          SUM(s.cost_micro_cents) OVER w <= l.balance AND l.active + ROW_NUMBER() OVER w <= s.max_concurrent_jobs AS fits
        FROM ${submitted} s JOIN locked l ON l.id = s.account_id
        WINDOW w AS (PARTITION BY s.account_id ORDER BY s.seq)
      ), judged AS (
        SELECT r.*, BOOL_AND(r.fits) OVER w AS admitted,
          COALESCE(BOOL_AND(r.fits) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS considered
        FROM ranked r WINDOW w AS (PARTITION BY r.account_id ORDER BY r.seq)
      ), charged AS (
        SELECT account_id, SUM(cost_micro_cents) AS cost, COUNT(*) AS jobs FROM judged WHERE admitted GROUP BY account_id
      ), account AS (
        UPDATE ${t.accounts} AS a SET balance_micro_cents = a.balance_micro_cents - c.cost,
          active_jobs = a.active_jobs - folded.n + c.jobs
        FROM charged c JOIN folded ON folded.account_id = c.account_id
        WHERE a.id = c.account_id
        RETURNING a.id
      ), ${restoredEnds}, line AS (
        INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
        SELECT j.ledger_id, j.account_id, j.job_id, 'charge', j.ledger_amount, j.now
        FROM judged j JOIN account ON account.id = j.account_id WHERE j.admitted AND j.cost_micro_cents > 0
      ), rollup AS (
        ${
      rollupUpsertOf(sql, t, rollupOf(sql`r`), sql`FROM (
          SELECT j.account_id, j.key_id, j.model, j.hour, SUM(j.charged_micro_cents) AS charged_micro_cents,
            SUM(j.refunded_micro_cents) AS refunded_micro_cents, SUM(j.jobs) AS jobs, SUM(j.failed) AS failed,
            SUM(j.cancelled) AS cancelled
          FROM judged j JOIN account ON account.id = j.account_id WHERE j.admitted
          GROUP BY j.account_id, j.key_id, j.model, j.hour
        ) r`)
    }
      )`

  /**
   * chargingEachPg for submits of distinct accounts, each charged or refused on its own, with the
   * columns of `SUBMITTED_COLUMNS` (`seq` unused): the accounts' rows locked in their order as
   * chargingEachPg locks them (`locked`: whichever way the plan reads it, rows come out of it in
   * that order, so two statements sharing accounts never deadlock), then no window over an
   * account's submits, each account's row written by its one submit. What a batch of
   * distinct accounts costs the database: chargingEachPg's ranking put 8 accounts' submits at
   * 4-15 % more of it and 11-13 % fewer submits a second (docs/decisions.md, "One account's
   * submits in the batch's statement"). `account` answers the charged accounts with their
   * fair_weight and the job each one's charge is for. The same order of locks as chargingPg:
   * ends skipped when locked, then each account's row, then its ledger line and rollup.
   */
  const chargingDistinctPg = (submitted: Statement.Fragment) =>
    sql`${endsOf(submitted)}, folded AS (
        SELECT s.account_id, COUNT(ended.account_id) AS n FROM ${submitted} s LEFT JOIN ended ON ended.account_id = s.account_id
        GROUP BY s.account_id
      ), locked AS (
        SELECT a.id FROM ${t.accounts} AS a JOIN folded ON folded.account_id = a.id ORDER BY a.id FOR UPDATE OF a
      ), account AS (
        UPDATE ${t.accounts} AS a SET balance_micro_cents = a.balance_micro_cents - s.cost_micro_cents,
          active_jobs = a.active_jobs - folded.n + 1
        FROM ${submitted} s JOIN folded ON folded.account_id = s.account_id JOIN locked ON locked.id = s.account_id
        WHERE a.id = s.account_id AND a.balance_micro_cents >= s.cost_micro_cents AND a.active_jobs - folded.n < s.max_concurrent_jobs
        RETURNING a.id, a.fair_weight, s.job_id
      ), ${restoredEnds}, line AS (
        INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
        SELECT s.ledger_id, s.account_id, s.job_id, 'charge', s.ledger_amount, s.now
        FROM ${submitted} s JOIN account ON account.job_id = s.job_id WHERE s.cost_micro_cents > 0
      ), rollup AS (
        ${
      rollupUpsertOf(sql, t, rollupOf(sql`s`), sql`FROM ${submitted} s JOIN account ON account.job_id = s.job_id`)
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

  return { chargingPg, chargingEachPg, chargingDistinctPg, chargeSqlite, chargeAccount, lockAccount }
}
