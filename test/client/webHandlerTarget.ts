import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { demoCatalog } from "../support/demoCatalog.js"
import type { Target } from "./suite.js"

const ORIGIN = "http://engine.test"
const ADMIN = "client-admin"

/** An engine in memory whose web handler answers every URL, upload and file URLs included; the demo catalog loaded. */
export const webHandlerTarget = async (workers: number): Promise<{ readonly engine: Engine; readonly target: Target }> => {
  const engine = await makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: ORIGIN }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    http: { adminToken: ADMIN },
    workers,
    webhookDispatchers: 0
  })
  const target: Target = { baseUrl: ORIGIN, fetch: (url, init) => engine.fetch(new Request(url, init)), adminToken: ADMIN, readsUploads: false }
  const catalog = await target.fetch(`${ORIGIN}/admin/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify(demoCatalog())
  })
  if (catalog.status !== 200) throw new Error(`the demo catalog was refused: ${catalog.status}`)
  return { engine, target }
}
