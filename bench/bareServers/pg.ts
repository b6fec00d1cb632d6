/**
 * The floor under the engine's HTTP submit on PostgreSQL: node:http reading the JSON body and
 * doing one INSERT with the raw `pg` driver per request (pool of 10, pg's default), nothing else.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
await pool.query(`CREATE TABLE IF NOT EXISTS bare_jobs (
  id TEXT PRIMARY KEY, api_key TEXT NOT NULL, model TEXT NOT NULL, input TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL
)`)

createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", async () => {
    if (req.method !== "POST") return res.writeHead(200).end("ok")
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; input: unknown }
      const id = `job_${randomUUID()}`
      await pool.query(
        "INSERT INTO bare_jobs (id, api_key, model, input, status, created_at) VALUES ($1, $2, $3, $4, 'pending', $5)",
        [id, req.headers.authorization ?? "", body.model, JSON.stringify(body.input), Date.now()]
      )
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ jobId: id, status: "pending" }))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
