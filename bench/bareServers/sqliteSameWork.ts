/**
 * The engine's store work for one submit on SQLite, with nothing of the engine around it:
 * node:http reading the JSON body, the API key looked up once and then cached (as the engine's
 * key cache does), and the engine's own submit statements per request, in one transaction taken
 * with BEGIN IMMEDIATE as the engine takes it: the charge and its concurrency check (with the job's
 * fair key), the job row, the ledger line and the hourly spend rollup (the texts adapters/sql/jobs
 * ran at the commit that added this file), with node:sqlite in WAL mode, synchronous NORMAL and
 * 2 KB pages like the engine's store. No batching across requests, no idempotency, no admission
 * beyond the charge's own conditions.
 *
 * Runs on the database file the bundled server made and funded (SQLITE_FILE; http_submit stops
 * that server first), table prefix `genjobs_`, the bench model's price and version
 * (COST_MICRO_CENTS, MODEL_VERSION, ESTIMATED_MS). Beside the one-INSERT server (sqlite.ts) it
 * tells what the work costs; beside the engine, what the engine adds to it.
 */
import { hash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import { DatabaseSync } from "node:sqlite"

const P = "genjobs_"
const cost = Number(process.env.COST_MICRO_CENTS)
const version = process.env.MODEL_VERSION!
const estimatedMs = Number(process.env.ESTIMATED_MS)
const db = new DatabaseSync(process.env.SQLITE_FILE!, { timeout: 5_000 })
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16000")

const begin = db.prepare("BEGIN IMMEDIATE")
const commit = db.prepare("COMMIT")
const rollback = db.prepare("ROLLBACK")
const charge = db.prepare(`UPDATE "${P}accounts" SET balance_micro_cents = balance_micro_cents - ?
  WHERE id = ? AND balance_micro_cents >= ? AND active_jobs < ?
  RETURNING balance_micro_cents + ? AS before, COALESCE(
    (SELECT fair_key FROM "${P}jobs" WHERE status = 'pending' AND account_id = CAST(? AS TEXT) ORDER BY fair_key DESC LIMIT 1)
      + 1000000 / fair_weight,
    (SELECT fair_key FROM "${P}jobs" WHERE status = 'pending' ORDER BY fair_key LIMIT 1),
    0) AS fair_key`)
const insertJob = db.prepare(`INSERT INTO "${P}jobs" ("id","account_id","api_key_id","request_id","model","version","input","webhook_url","status","cost_micro_cents","error","outputs","created_at","estimated_completion_at","started_at","completed_at","attempts","lease_owner","lease_expires_at","provider_phase","provider_handle","provider_starts","provider_route","fair_key","provider_progress","provider_log") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
const ledger = db.prepare(`INSERT INTO "${P}ledger" (id, account_id, job_id, kind, amount_micro_cents, created_at) VALUES (?, ?, ?, 'charge', ?, ?)`)
const spend = db.prepare(`INSERT INTO "${P}spend_hourly" AS s
    (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
  SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE true
  ON CONFLICT (account_id, hour, key_id, model) DO UPDATE SET
    charged_micro_cents = s.charged_micro_cents + excluded.charged_micro_cents,
    refunded_micro_cents = s.refunded_micro_cents + excluded.refunded_micro_cents,
    jobs = s.jobs + excluded.jobs,
    failed = s.failed + excluded.failed,
    cancelled = s.cancelled + excluded.cancelled`)
const keyByHash = db.prepare(`SELECT id, account_id FROM "${P}api_keys" WHERE hash = ? AND active = 1`)

interface Key {
  readonly id: string
  readonly accountId: string
}
const keys = new Map<string, Key>()

const keyOf = (authorization: string): Key | undefined => {
  const known = keys.get(authorization)
  if (known !== undefined) return known
  const row = keyByHash.get(hash("sha256", authorization.replace(/^Bearer\s+/i, ""), "hex"))
  const found = row === undefined ? undefined : { id: String(row["id"]), accountId: String(row["account_id"]) }
  if (found !== undefined) keys.set(authorization, found)
  return found
}

const newId = (prefix: string) => `${prefix}_${randomBytes(15).toString("base64url")}`
let requests = 0

/** The submit's writes in one transaction; undefined when the charge is refused. */
const submit = (key: Key, model: string, input: unknown) => {
  const now = Date.now()
  const jobId = newId("job")
  begin.run()
  try {
    const charged = charge.get(cost, key.accountId, cost, 1_000_000, cost, key.accountId)
    if (charged === undefined) {
      rollback.run()
      return undefined
    }
    insertJob.run(
      jobId, key.accountId, key.id, `req_${++requests}`, model, version, JSON.stringify(input), null, "pending", cost,
      null, null, now, now + estimatedMs, null, null, 0, null, null, null, null, 0, null, charged["fair_key"] as number, null, null
    )
    ledger.run(newId("led"), key.accountId, jobId, -cost, now)
    spend.run(key.accountId, key.id, model, Math.floor(now / 3_600_000) * 3_600_000, cost, 0, 1, 0, 0)
    commit.run()
    return { jobId, requestId: `req_${requests}`, now }
  } catch (error) {
    if (db.isTransaction) rollback.run()
    throw error
  }
}

createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    if (req.method !== "POST") return res.writeHead(200).end("ok")
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; input: unknown }
      const key = keyOf(req.headers.authorization ?? "")
      if (key === undefined) return res.writeHead(401).end("unknown key")
      const done = submit(key, body.model, body.input)
      if (done === undefined) return res.writeHead(402).end("refused")
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        jobId: done.jobId,
        requestId: done.requestId,
        status: "pending",
        estimatedCompletionTime: new Date(done.now + estimatedMs).toISOString(),
        costMicroCents: cost
      }))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
