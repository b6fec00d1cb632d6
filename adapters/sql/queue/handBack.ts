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
 * JobLeaseDriver.handBackLeases: a stopping worker gives back the leases of its started
 * generations. What the write sets is what a claim of an expired lease reads (`reclaimable` in
 * claims.ts): processing, `lease_expires_at` at or before the claim's now, attempts left; the
 * attempt the claim counted is given back, as the run was not cut off.
 */
export const makeHandBackStatements = ({ clock, sql, t }: JobSql) => {
  const jobStatus = statusFilter(sql)
  const handBack = sql.onDialectOrElse({
    // As renewals (held.ts): the rows are found by id, locked in id order (a renewal of the same
    // jobs may run beside it), and a write a deadlock still aborts is tried again.
    pg: () => (leases: ReadonlyArray<HeldLease>, now: number) =>
      sql.withTransaction(
        sql`WITH held AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(leases))}::jsonb) AS held(id text, "workerId" text))
        UPDATE ${t.jobs} AS j SET lease_owner = NULL, lease_expires_at = ${clock.now(now)}, attempts = j.attempts - 1
        FROM held WHERE ${heldInPg(sql, "held")}
          AND j.lease_owner = held."workerId" AND j.provider_handle IS NOT NULL RETURNING j.id`
      ).pipe(Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES })),
    // `statusFilter`: the rows are found by id, not by the status index (as renewals, held.ts).
    orElse: () => (leases: ReadonlyArray<HeldLease>, now: number) =>
      sql`UPDATE ${t.jobs} SET lease_owner = NULL, lease_expires_at = ${now}, attempts = attempts - 1
        WHERE ${jobStatus} = 'processing' AND provider_handle IS NOT NULL AND (id, lease_owner) IN (
          SELECT json_extract(value, '$.id'), json_extract(value, '$.workerId') FROM json_each(${JSON.stringify(leases)})
        ) RETURNING id`
  })
  return {
    handBackLeases: ((leases, now) =>
      handBack(leases, now).pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows.map((row) => row.id as JobId)),
        storeErrors("hand leases back")
      )) satisfies NonNullable<JobLeaseDriver["handBackLeases"]>
  }
}
