/**
 * Copies of the PostgreSQL drain's store statements (a measuring aid, not the engine's code), for
 * the bench files that send them without the engine: drainStatements.ts (claim and ending, apart
 * and combined, on one connection) and graphileSameWrites.ts (the claim of one job by id and its
 * ending, in a graphile-worker task).
 *
 * The texts are copies of the adapters' at the commit that added drainStatements.ts
 * (adapters/sql/queue/claims.ts `claimPg`, adapters/sql/queue/held.ts `finishHeldPg` and
 * `finishHeldAndClaimPg`), the claim's limit since read through a subquery as the engine's is: the
 * lease clock from the database, no excluded versions, no webhook URL, no job-event hints. A
 * change there is not followed here. The ending's triggers (the
 * active-job count's row in `active_job_ends`, migration 0010) are the database's, so they fire
 * on these statements as on the engine's.
 */
import { TABLE_PREFIX } from "./engine.js"

/** The engine's default max attempts, the claim's `attempts < $n` bound. */
export const MAX_ATTEMPTS = 3

const jobs = `${TABLE_PREFIX}jobs`
const databaseNow = `(SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint)`

/**
 * The claim's CTEs and UPDATE; `$n` are its parameters from `first` on: max attempts, limit, now,
 * lease owner. Beside an ending (`besideEnding`) its expired side leaves out the jobs being ended:
 * of two updates of one row in a statement PostgreSQL applies only one. With `byId`, both sides
 * take only the job whose id is the parameter after the lease owner (`$first+4`) instead of the
 * queue's order, so the pending side's `ORDER BY fair_key, id` (the queue's order) goes: kept,
 * the planner serves it from the pending jobs' index (fair_key, id) with the id as a filter on
 * every entry (87 pages a claim at 8,000 pending jobs, against 4 for the primary key's lookup it
 * takes without). The statement is otherwise the same: both sides, the expired side's order,
 * LIMIT, SKIP LOCKED, the UPDATE.
 */
export const claimOf = (first: number, besideEnding: boolean, byId = false) => {
  const [attempts, limitParameter, now, owner, id] = [first, first + 1, first + 2, first + 3, first + 4].map((n) => `$${n}`)
  // Through a subquery, as the engine's claim reads it (claims.ts): a bare `LIMIT $n` kept
  // PostgreSQL from keeping the prepared statement's generic plan once a backlog was counted.
  const limit = `(SELECT ${limitParameter}::int)`
  const only = byId ? `AND id = ${id}` : ""
  return {
    ctes: `expired AS (
        SELECT id FROM ${jobs} WHERE status = 'processing' AND lease_expires_at <= ${databaseNow} AND attempts < ${attempts} ${only}
          ${besideEnding ? "AND id <> ALL(ARRAY(SELECT id FROM d))" : ""}
        ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
      ), pending AS (
        SELECT id FROM ${jobs} WHERE status = 'pending' ${byId ? only : "ORDER BY fair_key, id"} LIMIT ${limit} FOR UPDATE SKIP LOCKED
      ), picked AS ((SELECT id FROM expired) UNION ALL (SELECT id FROM pending) LIMIT ${limit})`,
    update: `UPDATE ${jobs} AS j SET status = 'processing', attempts = attempts + 1,
        started_at = COALESCE(started_at, GREATEST(created_at, ${now}::bigint)), lease_owner = ${owner},
        lease_expires_at = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint + 300000,
        provider_phase = CASE WHEN status = 'pending' THEN 'starting' ELSE provider_phase END,
        provider_starts = CASE WHEN status = 'pending' THEN provider_starts + 1 ELSE provider_starts END
      FROM picked WHERE j.id = picked.id RETURNING j.*`
  }
}

/** The ending's CTEs: `$1` the endings as a JSON record set; `ended` the rows written, `entries` their changes-feed rows. */
export const ending = `d AS (SELECT * FROM jsonb_to_recordset($1::jsonb)
        AS d(id text, "leaseOwner" text, status text, outputs text, error text, completed_at bigint, route text)),
      ended AS (UPDATE ${jobs} AS j SET status = d.status, outputs = d.outputs, error = d.error, completed_at = d.completed_at,
          lease_owner = NULL, lease_expires_at = NULL, provider_route = COALESCE(d.route, j.provider_route)
        FROM d WHERE j.id = d.id AND j.id = ANY(ARRAY(SELECT id FROM d)) AND j.status COLLATE "C" = 'processing'
          AND j.lease_owner = d."leaseOwner" AND j.webhook_url IS NULL
        RETURNING j.*),
      entries AS (INSERT INTO ${TABLE_PREFIX}job_changes (account_id, job_id, request_id, status, model, version, ended_at,
          cost_micro_cents, refunded_micro_cents, error)
        SELECT e.account_id, e.id, e.request_id, e.status, e.model, e.version, e.completed_at, e.cost_micro_cents,
          CASE WHEN e.status = 'completed' THEN 0 ELSE e.cost_micro_cents END, e.error
        FROM ended AS e WHERE e.status IN ('completed', 'failed', 'cancelled'))`

export const claimAlone = claimOf(1, false)
/** A claim in the queue's order: `$1` max attempts, `$2` limit, `$3` now, `$4` lease owner. */
export const claimText = `WITH ${claimAlone.ctes} ${claimAlone.update}`
const claimOne = claimOf(1, false, true)
/** The claim of one given job: claimText's parameters, then `$5` the job's id. */
export const claimByIdText = `WITH ${claimOne.ctes} ${claimOne.update}`
/** The ending alone (`finishHeldWithoutWebhook`): `$1` the endings (endingsOf). */
export const endText = `WITH ${ending} SELECT * FROM ended`
const claimBeside = claimOf(2, true)
/** The ending and the next claim in one statement (`finishHeldAndClaim`, without its `room`): `$1` the endings, then claimText's. */
export const combinedText = `WITH ${ending}, ${claimBeside.ctes}, claimed AS (${claimBeside.update})
  SELECT true AS ended_row, * FROM ended UNION ALL SELECT false, * FROM claimed`

/** The endings of held jobs as the no-op provider's run ends them: completed, no outputs, now. */
export const endingsOf = (held: ReadonlyArray<{ readonly id: string; readonly lease_owner: string }>) =>
  JSON.stringify(held.map((row) => ({ id: row.id, leaseOwner: row.lease_owner, status: "completed", outputs: "[]", error: null, completed_at: Date.now(), route: null })))
