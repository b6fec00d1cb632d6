import { serve } from "@hono/node-server"
import { genjobsHono } from "genjobs/http"
import { Hono } from "hono"
import { basePath, host, makeExampleEngine, port } from "./engine.js"

const engine = await makeExampleEngine()
const app = new Hono().all(`${basePath}/*`, genjobsHono(engine))
const server = serve({ fetch: app.fetch, port, hostname: host })
process.once("SIGTERM", () => server.close(async () => {
  await engine.dispose()
  process.exit(0)
}))
