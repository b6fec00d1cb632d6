import Fastify from "fastify"
import { genjobsFastify } from "genjobs/http"
import { basePath, host, makeExampleEngine, port } from "./engine.js"

const engine = await makeExampleEngine()
const app = Fastify()
await app.register(genjobsFastify(engine), { prefix: basePath })
await app.listen({ port, host })
process.once("SIGTERM", async () => {
  await app.close()
  await engine.dispose()
  process.exit(0)
})
