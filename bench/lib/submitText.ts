/**
 * The engine's single-submit statement on PostgreSQL as text (a measuring aid, not the engine's
 * code): the charge and its concurrency check, the ledger line, the hourly spend rollup, the job
 * row with its fair key and the NOTIFY of the store's claimers, in one statement
 * (adapters/sql/jobs/submit.ts's plain submit as it compiles, the channel bound last; a change
 * there is not followed here). For
 * the bench files that send the engine's submit without the engine: bareServers/pgSameWork.ts and
 * httpApiPgSameWork.ts (per request) and pickupPgFloor.ts (the floor of a pickup from another process).
 */

/** Table names' prefix of the databases the bench's engines make. */
const P = "genjobs_"

const submitTextOf = (notify: boolean) => `WITH ${notify ? "notified AS (SELECT pg_notify($49, 'jobs')), " : ""}ended AS (
  DELETE FROM "${P}active_job_ends" WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM "${P}active_job_ends" WHERE account_id = $1 FOR UPDATE SKIP LOCKED
  )) RETURNING account_id
), folded AS (
  SELECT COUNT(*) AS n FROM ended
), account AS (
  UPDATE "${P}accounts" AS a SET balance_micro_cents = a.balance_micro_cents - $2,
    active_jobs = a.active_jobs - folded.n + 1
  FROM folded
  WHERE a.id = $3 AND a.balance_micro_cents >= $4 AND a.active_jobs - folded.n < $5
  RETURNING a.id, a.balance_micro_cents + $6 AS before, a.fair_weight
), restored AS (
  INSERT INTO "${P}active_job_ends" (account_id) SELECT account_id FROM ended WHERE NOT EXISTS (SELECT 1 FROM account)
), line AS (
  INSERT INTO "${P}ledger" (id, account_id, job_id, kind, amount_micro_cents, created_at)
  SELECT $7, id, $8, 'charge', $9, $10 FROM account WHERE $11::bigint > 0
), rollup AS (
  INSERT INTO "${P}spend_hourly" AS s
    (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
  SELECT $12, $13, $14, $15, $16, $17, $18, $19, $20 FROM account WHERE true
  ON CONFLICT (account_id, hour, key_id, model) DO UPDATE SET
    charged_micro_cents = s.charged_micro_cents + excluded.charged_micro_cents,
    refunded_micro_cents = s.refunded_micro_cents + excluded.refunded_micro_cents,
    jobs = s.jobs + excluded.jobs,
    failed = s.failed + excluded.failed,
    cancelled = s.cancelled + excluded.cancelled
)
INSERT INTO "${P}jobs" (id, account_id, api_key_id, request_id, model, version, input, webhook_url, status, cost_micro_cents, error, outputs, created_at, estimated_completion_at, started_at, completed_at, attempts, lease_owner, lease_expires_at, provider_phase, provider_handle, provider_starts, provider_route, fair_key, provider_progress, provider_log)
SELECT $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, COALESCE(
  (SELECT fair_key FROM "${P}jobs" WHERE status = 'pending' AND account_id = CAST($44 AS TEXT) ORDER BY fair_key DESC LIMIT 1)
    + 1000000 / account.fair_weight,
  (SELECT fair_key FROM "${P}jobs" WHERE status = 'pending' ORDER BY fair_key LIMIT 1),
  0), $45, $46 FROM account${notify ? " CROSS JOIN notified" : ""} WHERE set_config($47, $48, true) IS NOT NULL RETURNING fair_key`

/** The engine's statement, its NOTIFY of the store's claimers in it (the channel bound last). */
export const SUBMIT_TEXT = submitTextOf(true)

/**
 * The same without its NOTIFY, for the servers that send it once a request from parallel
 * connections (bareServers/pgSameWork.ts, httpApiPgSameWork.ts): the engine's submits share one
 * statement a batch, but statements that notify from parallel connections would commit one WAL
 * flush at a time on PostgreSQL's notify lock (decisions.md, "NOTIFY after the submit").
 */
export const SUBMIT_TEXT_WITHOUT_NOTIFY = submitTextOf(false)

/** An active API key by its secret's SHA-256 (hex), as the engine's key lookup finds it: `$1` the hash. */
export const KEY_BY_HASH_TEXT = `SELECT id, account_id FROM "${P}api_keys" WHERE hash = $1 AND active = 1`

/** What the engine's submit binds besides the job: the account, its key and the model's price. */
export interface EngineSubmit {
  readonly accountId: string
  readonly keyId: string
  readonly model: string
  readonly version: string
  readonly costMicroCents: number
  readonly estimatedMs: number
}

export interface SubmitOf extends EngineSubmit {
  readonly jobId: string
  readonly requestId: string
  readonly ledgerId: string
  /** The job's input as JSON text. */
  readonly input: string
  readonly now: number
}

/**
 * SUBMIT_TEXT's parameters for one job, as the engine binds them (no webhook, no idempotency key),
 * the jobs channel last; without it (`notify` false) SUBMIT_TEXT_WITHOUT_NOTIFY's.
 */
export const submitValues = (s: SubmitOf, notify = true): Array<unknown> => {
  const { accountId, costMicroCents: cost, jobId, now } = s
  return [
    accountId, cost, accountId, cost, 1_000_000, cost,
    s.ledgerId, jobId, -cost, now, cost,
    accountId, s.keyId, s.model, Math.floor(now / 3_600_000) * 3_600_000, cost, 0, 1, 0, 0,
    jobId, accountId, s.keyId, s.requestId, s.model, s.version, s.input, null, "pending", cost,
    null, null, now, now + s.estimatedMs, null, null, 0, null, null, null, null, 0, null,
    accountId, null, null, "genjobs.counted_job", jobId, ...(notify ? [`${P}jobs`] : [])
  ]
}
