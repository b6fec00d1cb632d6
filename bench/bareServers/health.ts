/**
 * The floor under every request of the engine's HTTP API: node:http answering GET /health with
 * the engine's own body, `{"status":"ok"}`, and nothing else.
 */
import { createServer } from "node:http"

const body = JSON.stringify({ status: "ok" })

createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
  })
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
