import { afterAll, beforeAll, describe } from "vitest"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"
import { clientSuite, type Target } from "./suite.js"

const ADMIN = "client-e2e-admin"

let server: RunningServer
let target: Target
beforeAll(async () => {
  server = await startServer({ DATA_DIR: tempDataDir(), ADMIN_TOKEN: ADMIN, WORKER_CONCURRENCY: "1" })
  target = { baseUrl: server.url, fetch: (url, init) => fetch(url, init), adminToken: ADMIN, readsUploads: true }
})
afterAll(async () => {
  await server.stop("SIGKILL")
})

describe("the client against the bundled server, over HTTP", () => {
  clientSuite(() => target)
})
