import express from "express"
import { genjobsExpress } from "genjobs/http"
import { basePath, host, makeExampleEngine, port } from "./engine.js"

const engine = await makeExampleEngine()
const app = express()
if (process.env["EXPRESS_JSON"] === "1") app.use(express.json()) // the app's own parser: the mount works with or without it
app.use(basePath, genjobsExpress(engine))
const server = app.listen(port, host)
process.once("SIGTERM", () => server.close(async () => {
  await engine.dispose()
  process.exit(0)
}))
