import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { LedgerKind } from "../../src/domain/account.js"
import { newLedgerEntryId } from "../../src/domain/ids.js"
import type { Tables } from "./tables.js"

/**
 * Writes a ledger line and moves the balance by the same amount, inside the caller's
 * transaction. A charge or refund of a job exists at most once (unique job_id, kind): a second
 * attempt writes nothing and moves nothing. Answers whether it was written.
 */
export const postLedger = (sql: SqlClient.SqlClient, t: Tables, entry: {
  readonly accountId: string
  readonly jobId: string | null
  readonly kind: LedgerKind
  readonly amountMicroCents: number
  readonly now: number
}) =>
  Effect.gen(function*() {
    const inserted = yield* sql`INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
      VALUES (${newLedgerEntryId(entry.now)}, ${entry.accountId}, ${entry.jobId}, ${entry.kind}, ${entry.amountMicroCents}, ${entry.now})
      ON CONFLICT (job_id, kind) DO NOTHING RETURNING id`
    if (inserted.length === 0) return false
    yield* sql`UPDATE ${t.accounts} SET balance_micro_cents = balance_micro_cents + ${entry.amountMicroCents}
      WHERE id = ${entry.accountId}`
    return true
  })
