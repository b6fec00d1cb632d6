import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { expect } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"

/**
 * An engine for scratch projects to call: the memory store, the demo provider and its catalog,
 * served on loopback at `baseUrl` (the caller closes `server` and disposes `engine`).
 */
export const serveDemoEngine = async (adminToken: string): Promise<{ engine: Engine; server: Server; baseUrl: string }> => {
  const server = createServer().listen(0, "127.0.0.1")
  await new Promise((resolve) => server.once("listening", resolve))
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const engine = await makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: baseUrl }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    http: { adminToken },
    webhookDispatchers: 0
  })
  server.on("request", genjobsNode(engine))
  const catalog = await fetch(`${baseUrl}/admin/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(demoCatalog())
  })
  expect(catalog.status).toBe(200)
  return { engine, server, baseUrl }
}
