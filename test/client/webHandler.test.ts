import { DEMO_PROVIDER_ID, type Engine, makeDemoGenerator, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { afterAll, beforeAll, describe, expect } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { clientSuite, type Target } from "./suite.js"

const ORIGIN = "http://engine.test"
const ADMIN = "client-admin"

let engine: Engine
let target: Target
beforeAll(async () => {
  engine = await makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: ORIGIN }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoGenerator() },
    http: { adminToken: ADMIN },
    workers: 1,
    webhookDispatchers: 0
  })
  // Every URL, upload and file URLs included, is answered by the engine's web handler.
  target = { baseUrl: ORIGIN, fetch: (url, init) => engine.fetch(new Request(url, init)), adminToken: ADMIN, readsUploads: false }
  const catalog = await target.fetch(`${ORIGIN}/admin/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify(demoCatalog())
  })
  expect(catalog.status).toBe(200)
})
afterAll(() => engine.dispose())

describe("the client against the engine's web handler", () => {
  clientSuite(() => target)
})
