/**
 * The floor under the engine's HTTP submit on SQLite: node:http reading the JSON body and doing
 * one INSERT with node:sqlite (the engine's driver) per request, in WAL mode with synchronous
 * NORMAL like the engine's store, nothing else.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { DatabaseSync } from "node:sqlite"

const db = new DatabaseSync(process.env.SQLITE_FILE!)
// The engine's pragmas (adapters/sql/sqliteNode/SqliteClient.ts): a commit waits for no fsync.
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
db.exec(`CREATE TABLE IF NOT EXISTS bare_jobs (
  id TEXT PRIMARY KEY, api_key TEXT NOT NULL, model TEXT NOT NULL, input TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL
)`)
const insert = db.prepare("INSERT INTO bare_jobs (id, api_key, model, input, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)")

createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    if (req.method !== "POST") return res.writeHead(200).end("ok")
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; input: unknown }
      const id = `job_${randomUUID()}`
      insert.run(id, req.headers.authorization ?? "", body.model, JSON.stringify(body.input), Date.now())
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ jobId: id, status: "pending" }))
    } catch (error) {
      res.writeHead(500).end(String(error))
    }
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
