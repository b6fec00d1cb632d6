/**
 * The engine's store work for one submit on PostgreSQL, with nothing of the engine around it:
 * node:http reading the JSON body, the API key looked up once and then cached (as the engine's
 * key cache does), and the engine's own single-submit statement per request (the charge and its
 * concurrency check, the ledger line, the hourly spend rollup and the job row with its fair key, in
 * one statement: adapters/sql/jobs/submit.ts's text as PostgreSQL logged it at the commit that
 * added this file) over the raw `pg` driver, pool of 10 (pg's default). No batching across
 * requests, no idempotency, no admission beyond the charge's own conditions.
 *
 * Runs on a database the bundled server migrated and funded (http_submit stops that server first),
 * table prefix `genjobs_`, the bench model's price and version (COST_MICRO_CENTS, MODEL_VERSION,
 * ESTIMATED_MS). Beside the one-INSERT server (pg.ts) it tells what the work costs; beside the
 * engine, what the engine adds to it.
 */
import { hash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const P = "genjobs_"
const cost = Number(process.env.COST_MICRO_CENTS)
const version = process.env.MODEL_VERSION!
const estimatedMs = Number(process.env.ESTIMATED_MS)
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })

const SUBMIT = `WITH ended AS (
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
  0), $45, $46 FROM account WHERE set_config($47, $48, true) IS NOT NULL RETURNING fair_key`

interface Key {
  readonly id: string
  readonly accountId: string
}
const keys = new Map<string, Key>()

const keyOf = async (authorization: string): Promise<Key | undefined> => {
  const known = keys.get(authorization)
  if (known !== undefined) return known
  const secret = authorization.replace(/^Bearer\s+/i, "")
  const { rows } = await pool.query<{ id: string; account_id: string }>(
    `SELECT id, account_id FROM "${P}api_keys" WHERE hash = $1 AND active = 1`,
    [hash("sha256", secret, "hex")]
  )
  const found = rows[0] === undefined ? undefined : { id: rows[0].id, accountId: rows[0].account_id }
  if (found !== undefined) keys.set(authorization, found)
  return found
}

const newId = (prefix: string) => `${prefix}_${randomBytes(15).toString("base64url")}`
let requests = 0

createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", async () => {
    if (req.method !== "POST") return res.writeHead(200).end("ok")
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; input: unknown }
      const key = await keyOf(req.headers.authorization ?? "")
      if (key === undefined) return res.writeHead(401).end("unknown key")
      const now = Date.now()
      const jobId = newId("job")
      const requestId = `req_${++requests}`
      const { accountId } = key
      const { rows } = await pool.query({
        name: "submit",
        text: SUBMIT,
        values: [
          accountId, cost, accountId, cost, 1_000_000, cost,
          newId("led"), jobId, -cost, now, cost,
          accountId, key.id, body.model, Math.floor(now / 3_600_000) * 3_600_000, cost, 0, 1, 0, 0,
          jobId, accountId, key.id, requestId, body.model, version, JSON.stringify(body.input), null, "pending", cost,
          null, null, now, now + estimatedMs, null, null, 0, null, null, null, null, 0, null,
          accountId, null, null, "genjobs.counted_job", jobId
        ]
      })
      if (rows.length === 0) return res.writeHead(402).end("refused")
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        jobId,
        requestId,
        status: "pending",
        estimatedCompletionTime: new Date(now + estimatedMs).toISOString(),
        costMicroCents: cost
      }))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
