import { Array as Arr, Effect } from "effect"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import type { JobSql } from "../queue/context.js"
import { storeErrors } from "../rows.js"

/**
 * The changes feed's rows a job's end writes in its transaction (SqlChanges reads them). The
 * position is the columns' defaults: PostgreSQL's transaction id and identity, SQLite's rowid.
 */
export const makeChangeInserts = ({ sql, t }: JobSql): JobStoreDriver["insertChanges"] => (changes) =>
  (!Arr.isReadonlyArrayNonEmpty(changes) ? Effect.void : sql`INSERT INTO ${t.job_changes} ${
    sql.insert(Arr.map(changes, (change) => ({
      account_id: change.accountId,
      job_id: change.jobId,
      request_id: change.requestId,
      status: change.status,
      model: change.model,
      version: change.version,
      ended_at: change.endedAt,
      cost_micro_cents: change.costMicroCents,
      refunded_micro_cents: change.refundedMicroCents,
      error: change.error === null ? null : JSON.stringify(change.error)
    })))
  }`.pipe(Effect.asVoid)).pipe(storeErrors("insert changes"))
