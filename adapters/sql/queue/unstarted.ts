import { Effect, Schema } from "effect"
import type { JobId } from "../../../src/domain/ids.js"
import type { JobLeaseDriver } from "../../../src/ports/JobLeaseDriver.js"
import type { HeldLease } from "../../../src/ports/JobRepo.js"
import { decodeRows, storeErrors } from "../rows.js"
import type { JobSql } from "./context.js"
import { byId, DEADLOCK_RETRIES, heldInPg, isDeadlock } from "./lockOrder.js"
import { statusFilter } from "./statusFilter.js"

const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))

/**
 * JobLeaseDriver.returnUnstarted: a stopping worker puts back the jobs it claimed ahead and never
 * started. It undoes what a first pickup wrote (`claimSet`, claims.ts): the row reads as it did
 * when pending, and its `fair_key`, which no claim writes, puts it back in its place in claim
 * order (the pending index is partial on status, so the row joins it again). Pending and
 * processing are both active: the account's count of active jobs has nothing to undo.
 */
export const makeUnstartedStatements = ({ sql, t }: JobSql) => {
  const jobStatus = statusFilter(sql)
  const unstarted = sql`status = 'pending', attempts = 0, provider_phase = NULL, provider_starts = provider_starts - 1,
    lease_owner = NULL, lease_expires_at = NULL, started_at = NULL`
  const returned = sql.onDialectOrElse({
    // As hand-backs (handBack.ts): found by id, locked in id order beside renewals of the same
    // jobs, and a write a deadlock still aborts is tried again.
    pg: () => (leases: ReadonlyArray<HeldLease>) =>
      sql.withTransaction(
        sql`WITH held AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(leases))}::jsonb) AS held(id text, "workerId" text))
        UPDATE ${t.jobs} AS j SET ${unstarted}
        FROM held WHERE ${heldInPg(sql, "held")}
          AND j.lease_owner = held."workerId" AND j.attempts = 1 AND j.provider_phase = 'starting' AND j.provider_handle IS NULL
        RETURNING j.id`
      ).pipe(Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES })),
    // `statusFilter`: the rows are found by id, not by the status index (as renewals, held.ts).
    orElse: () => (leases: ReadonlyArray<HeldLease>) =>
      sql`UPDATE ${t.jobs} SET ${unstarted}
        WHERE ${jobStatus} = 'processing' AND attempts = 1 AND provider_phase = 'starting' AND provider_handle IS NULL AND (id, lease_owner) IN (
          SELECT json_extract(value, '$.id'), json_extract(value, '$.workerId') FROM json_each(${JSON.stringify(leases)})
        ) RETURNING id`
  })
  return {
    returnUnstarted: ((leases) =>
      returned(leases).pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows.map((row) => row.id as JobId)),
        storeErrors("return unstarted jobs")
      )) satisfies NonNullable<JobLeaseDriver["returnUnstarted"]>
  }
}
