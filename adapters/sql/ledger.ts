import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { LedgerKind } from "../../src/domain/account.js"
import { newLedgerEntryId } from "../../src/domain/ids.js"
import { rollupChange } from "../../src/domain/spend.js"
import type { JobLedgerEntry } from "../../src/ports/JobStoreDriver.js"
import { rollupUpsert } from "./jobs/spend.js"
import type { Tables } from "./tables.js"

/** A line that moves no job's money: a credit. */
interface CreditLine {
  readonly accountId: string
  readonly jobId: null
  readonly kind: LedgerKind
  readonly amountMicroCents: number
  readonly now: number
}

/**
 * Writes a ledger line and moves the balance by the same amount, inside the caller's
 * transaction; a job's line is counted in its spend rollup too, after the account's row (the
 * order a charge takes them in, so the two never deadlock). A charge or refund of a job exists
 * at most once (unique job_id, kind): a second attempt writes nothing and moves nothing. A job's
 * zero amount writes no line: only its rollup counts the outcome. Answers whether it was written.
 */
export const postLedger = (sql: SqlClient.SqlClient, t: Tables, entry: CreditLine | JobLedgerEntry) =>
  Effect.gen(function*() {
    const job = "model" in entry ? entry : undefined
    const rollup = job === undefined
      ? Effect.void
      : rollupUpsert(
        sql,
        t,
        { accountId: job.accountId, keyId: job.keyId, model: job.model, at: job.chargedAt },
        rollupChange(job),
        sql``
      )
    if (job !== undefined && job.amountMicroCents === 0) return yield* Effect.as(rollup, true)
    const inserted = yield* sql`INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
      VALUES (${newLedgerEntryId(entry.now)}, ${entry.accountId}, ${entry.jobId}, ${entry.kind}, ${entry.amountMicroCents}, ${entry.now})
      ON CONFLICT (job_id, kind) DO NOTHING RETURNING id`
    if (inserted.length === 0) return false
    yield* sql`UPDATE ${t.accounts} SET balance_micro_cents = balance_micro_cents + ${entry.amountMicroCents}
      WHERE id = ${entry.accountId}`
    yield* rollup
    return true
  })
