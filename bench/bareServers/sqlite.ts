/**
 * The floor under the engine's HTTP submit on SQLite: node:http reading the JSON body and doing
 * one INSERT with better-sqlite3 per request, in WAL mode like the engine's store, nothing else.
 */
import { randomUUID } from "node:crypto"
import { createRequire } from "node:module"
import { createServer } from "node:http"

// better-sqlite3 ships no types; this is the little of it used here.
interface Statement { run: (...params: ReadonlyArray<unknown>) => unknown }
interface Database { pragma: (sql: string) => unknown; exec: (sql: string) => void; prepare: (sql: string) => Statement }
const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new(filename: string) => Database

const db = new Sqlite(process.env.SQLITE_FILE!)
db.pragma("journal_mode = WAL")
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
