import { genjobsNext } from "genjobs/http"
import { basePath, makeExampleEngine } from "../../../../../engine.js"

const engine = await makeExampleEngine()
// Next exits on SIGTERM by itself unless NEXT_MANUAL_SIG_HANDLE is set; then this drains the engine.
process.once("SIGTERM", async () => {
  await engine.dispose()
  process.exit(0)
})
export const { GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD } = genjobsNext(engine, { basePath })
