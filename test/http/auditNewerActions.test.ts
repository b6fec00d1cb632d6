import { Effect } from "effect"
import { afterEach, expect, it } from "vitest"
import { makeTestEngine } from "../../adapters/testing/makeTestEngine.js"
import { AuditLog } from "../../src/ports/AuditLog.js"

const engines: Array<Awaited<ReturnType<typeof makeTestEngine>>> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.dispose()))
})

it("GET /admin/audit lists an entry a newer release recorded with an action this one does not know", async () => {
  const engine = await makeTestEngine()
  engines.push(engine)
  await engine.run(AuditLog.use((audit) =>
    audit.recorded(Effect.void, () => ({
      id: "aud_newer",
      actor: "admin",
      action: "account.archive",
      target: "acc_1",
      summary: {},
      requestId: null,
      createdAt: Date.now()
    }))))
  const reply = await engine.request("GET", "/admin/audit", { key: engine.admin })
  expect(reply.status).toBe(200)
  expect(reply.body).toMatchObject({ entries: [{ id: "aud_newer", action: "account.archive" }] })
})
