/**
 * node:http answering POST /v1/jobs/submit with nothing behind it: JSON.parse and a hand-written
 * check of the body's shape, and a small JSON answer. The reference of the framework's floor.
 */
import { createServer } from "node:http"

let submitted = 0

const valid = (body: any) =>
  body !== null && typeof body === "object" && typeof body.model === "string" && body.input !== null &&
  typeof body.input === "object" && !Array.isArray(body.input) && (body.webhookUrl === undefined || typeof body.webhookUrl === "string")

createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      res.writeHead(400).end()
      return
    }
    if (!valid(body)) {
      res.writeHead(400).end()
      return
    }
    const answer = JSON.stringify({ jobId: `job_${++submitted}`, status: "pending", model: (body as { model: string }).model })
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) }).end(answer)
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
