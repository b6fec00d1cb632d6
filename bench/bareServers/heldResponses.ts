/**
 * The floor under a status stream: node:http holding every GET /hold response open, written
 * `: open` at once and a heartbeat comment every 15 s from one timer, as the engine's streams
 * are; GET /health answers for the bench's readiness check.
 */
import { createServer, type ServerResponse } from "node:http"

const held = new Set<ServerResponse>()

setInterval(() => {
  for (const res of held) res.write(": heartbeat\n\n")
}, 15_000)

createServer((req, res) => {
  req.resume()
  if (req.url !== "/hold") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok" }))
    return
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  res.write(": open\n\n")
  held.add(res)
  res.on("close", () => held.delete(res))
}).listen(Number(process.env.PORT), "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
