/**
 * The engine's store work for one submit on PostgreSQL, with nothing of the engine around it:
 * node:http reading the JSON body, the API key looked up once and then cached (as the engine's
 * key cache does), and the engine's own single-submit statement per request (lib/submitText.ts:
 * the charge and its concurrency check, the ledger line, the hourly spend rollup and the job row
 * with its fair key, in one statement; without the NOTIFY the engine's statement carries, which
 * would queue these parallel statements' commits on PostgreSQL's notify lock) over the raw `pg`
 * driver, pool of 10 (pg's default). No batching across requests, no idempotency, no admission
 * beyond the charge's own conditions.
 *
 * Runs on a database the bundled server migrated and funded (http_submit stops that server first),
 * table prefix `genjobs_`, the bench model's price and version (COST_MICRO_CENTS, MODEL_VERSION,
 * ESTIMATED_MS). Beside the one-INSERT server (pg.ts) it tells what the work costs; beside the
 * engine, what the engine adds to it.
 */
import { hash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import { KEY_BY_HASH_TEXT, SUBMIT_TEXT_WITHOUT_NOTIFY, submitValues } from "../lib/submitText.js"

const cost = Number(process.env.COST_MICRO_CENTS)
const version = process.env.MODEL_VERSION!
const estimatedMs = Number(process.env.ESTIMATED_MS)
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })

interface Key {
  readonly id: string
  readonly accountId: string
}
const keys = new Map<string, Key>()

const keyOf = async (authorization: string): Promise<Key | undefined> => {
  const known = keys.get(authorization)
  if (known !== undefined) return known
  const secret = authorization.replace(/^Bearer\s+/i, "")
  const { rows } = await pool.query<{ id: string; account_id: string }>(KEY_BY_HASH_TEXT, [hash("sha256", secret, "hex")])
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
        text: SUBMIT_TEXT_WITHOUT_NOTIFY,
        values: submitValues({
          accountId, keyId: key.id, model: body.model, version, costMicroCents: cost, estimatedMs,
          jobId, requestId, ledgerId: newId("led"), input: JSON.stringify(body.input), now
        }, false)
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
