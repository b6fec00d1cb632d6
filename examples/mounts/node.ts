import { genjobsNode } from "genjobs/http"
import { createServer } from "node:http"
import { host, makeExampleEngine, port } from "./engine.js"

const engine = await makeExampleEngine()
// The engine answers every path under its base path and a 404 envelope elsewhere.
const server = createServer(genjobsNode(engine)).listen(port, host)
process.once("SIGTERM", () => server.close(async () => {
  await engine.dispose()
  process.exit(0)
}))
