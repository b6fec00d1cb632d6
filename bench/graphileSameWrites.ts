/**
 * The same-writes reference of queue_drain (issue 34): graphile-worker running a task that makes,
 * for its job, the store writes the engine's worker makes for one drained job, on an
 * engine-migrated database holding the engine's job rows (queueDrain.ts `graphileSameWritesSide`).
 * It answers how fast graphile-worker drains when each job costs what an engine job costs the
 * store, beside the no-op reference, which measures its queue alone.
 *
 * Each graphile-worker job's payload is `{ id }`, an engine job's id (pending, submitted through
 * Jobs.submit as queue_drain's engine side submits). Its task (`sameWritesTask`) sends, through
 * graphile-worker's own pool (`helpers.withPgClient`, one checkout per statement, as the engine's
 * pool gives each statement its own), two statements, each its own transaction:
 *
 * 1. the engine's claim (lib/drainTexts.ts `claimByIdText`): pending -> processing, attempts + 1,
 *    started_at, lease owner and expiry, provider phase `starting` and starts + 1, RETURNING the
 *    row. The same statement as the engine's `claimPg` (its expired side, its pending side, LIMIT,
 *    SKIP LOCKED, the UPDATE), except that both sides take only the task's job (`AND id = $5`)
 *    instead of the next in the fair order: graphile-worker is the queue here. Limit 1.
 * 2. the engine's ending (`endText`, `finishHeldWithoutWebhook`): processing -> completed, outputs
 *    `[]`, completed_at, the lease released, the changes feed's row (job_changes), and the
 *    active-job count's row in `active_job_ends` (the jobs table's trigger, migration 0010).
 *
 * Either must write exactly its one row, or the task throws (graphile-worker then records the
 * failure, which the figure checks for). Named (prepared) statements, as the engine's pool
 * prepares its own.
 *
 * What differs from the engine's drain:
 * - Per job, not batched: two statements and two commits a job. The engine claims many jobs at
 *   once and ends many in one statement, most often with the next claim in the same statement
 *   (`finishHeldAndClaim`; 44-46 endings and as many claims a statement at 2 x 24 in
 *   docs/benchmarks.md, "queue_drain on PostgreSQL: the phases of a drain"). graphile-worker's
 *   batch jobs (an array payload run by one task call) are not used; its own fetches (a local
 *   queue of 500) and completions (completeJobBatchDelay 0) are batched as in the no-op reference.
 * - graphile-worker's own writes come on top: its job row's insert before the clock, its fetch
 *   (lock) and its delete on completion. The engine has no second table.
 * - The engine's other statements are not sent: the job-event hints (`pg_notify`), lease
 *   renewals (none in a drain this short), the reaper's and passes' statements, the catalog reads.
 * - The pool: graphile-worker's, of SAME_WRITES_POOL (10, the engine's store pool default,
 *   adapters/sql/postgres.ts; BENCH_GRAPHILE_SAME_WRITES_POOL to change it) per process, so both
 *   sides hold at most as many connections; the no-op reference's pool is concurrency + 1 (25),
 *   which its no-op task never fills.
 */
import type { PoolClient } from "pg"
import type { Task } from "graphile-worker"
import { claimByIdText, endingsOf, endText, MAX_ATTEMPTS } from "./lib/drainTexts.js"

/** The task's name in graphile-worker's job rows. */
export const SAME_WRITES_TASK = "engineWrites"

/**
 * Connections of a same-writes worker process's pool: the engine's store pool default, or
 * BENCH_GRAPHILE_SAME_WRITES_POOL (a measuring aid: does the pool bound the task's writes?).
 */
export const SAME_WRITES_POOL = Number(process.env.BENCH_GRAPHILE_SAME_WRITES_POOL ?? 10)

type Claimed = { readonly id: string; readonly lease_owner: string }

/** The task: claims the payload's engine job by id, then ends it completed, as the engine's worker does. */
export const sameWritesTask = (leaseOwner: string): Task => async (payload, helpers) => {
  const { id } = payload as { readonly id: string }
  const claimed = await helpers.withPgClient((client: PoolClient) =>
    client.query<Claimed>({ name: "engine_claim_by_id", text: claimByIdText, values: [MAX_ATTEMPTS, 1, Date.now(), leaseOwner, id] })
  )
  if (claimed.rows.length !== 1) throw new Error(`engine job ${id}: claimed ${claimed.rows.length} rows`)
  const ended = await helpers.withPgClient((client: PoolClient) =>
    client.query({ name: "engine_end", text: endText, values: [endingsOf(claimed.rows)] })
  )
  if (ended.rowCount !== 1) throw new Error(`engine job ${id}: ended ${ended.rowCount} rows`)
}
