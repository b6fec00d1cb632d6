import { Effect } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { Admin } from "genjobs"
import { type AsyncTestEngine, makeTestEngine, testCatalog } from "genjobs/testing"

const engines: Array<AsyncTestEngine> = []
const start = async (options: Parameters<typeof makeTestEngine>[0] = {}) => {
  const engine = await makeTestEngine(options)
  engines.push(engine)
  return engine
}
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.dispose()))
})

describe("test accounts", () => {
  it("binds an IP-restricted key's helpers to the address they come from", async () => {
    const engine = await start()
    const office = await engine.account({ allowedIPs: ["203.0.113.0/24"], address: "203.0.113.7" })
    await expect(office.submit("test/text")).resolves.toMatchObject({ status: "pending" })
    await expect(office.from("198.51.100.1").list()).rejects.toMatchObject({ status: 403, code: "IP_NOT_WHITELISTED" })
    await expect((await engine.account({ allowedIPs: ["10.0.0.0/8"] })).list()).rejects.toMatchObject({ code: "IP_NOT_WHITELISTED" })
  })

  it("gives the key only the scopes asked for", async () => {
    const reader = await start().then((engine) => engine.account({ scopes: ["check_status"] }))
    await expect(reader.submit("test/text")).rejects.toMatchObject({ status: 403, code: "OPERATION_NOT_ALLOWED" })
    await expect(reader.list()).resolves.toMatchObject({ jobs: [], hasMore: false })
  })

  it("opens the balance in credits, charges and refunds a cancelled job", async () => {
    const engine = await start()
    const bob = await engine.account({ credits: 3 })
    const { jobId } = await bob.submit("test/image")
    await expect(bob.submit("test/image")).rejects.toMatchObject({ status: 402, code: "INSUFFICIENT_BALANCE" })
    expect(await bob.balance()).toBe(1)
    expect(await bob.cancel(jobId)).toEqual({ jobId, status: "cancelled", refundedMicroCents: 20_000 })
    expect(await bob.balance()).toBe(3)
    expect((await bob.list({ status: "cancelled" })).jobs.map((j) => j.jobId)).toEqual([jobId])
    expect(await engine.runJobs()).toBe(0)
  })

  it("replaces the catalog, refusing an invalid one with its reasons", async () => {
    const engine = await start()
    const alice = await engine.account()
    await engine.catalog({ ...testCatalog, models: testCatalog.models.filter((m) => m.slug === "test/text") })
    await expect(alice.submit("test/image")).rejects.toMatchObject({ status: 404, code: "MODEL_NOT_FOUND" })
    const refused = await engine.catalog({ ...testCatalog, providers: [] }).catch((error) => error)
    expect(refused).toMatchObject({ status: 400, code: "VALIDATION_ERROR" })
    expect(JSON.stringify(refused.body)).toContain("unknown providerId")
  })

  it("mounts under a base path, with output URLs under it", async () => {
    const engine = await start({ basePath: "/api/genjobs" })
    const alice = await engine.account()
    const { jobId } = await alice.submit("test/image")
    await engine.runJobs()
    const { output } = await alice.get(jobId)
    expect(output!.startsWith("http://genjobs.test/api/genjobs/files/")).toBe(true)
    expect((await engine.fetch(new Request(output!))).status).toBe(200)
  })

  it("runs jobs in the background when asked for workers", async () => {
    const engine = await start({ workers: 1 })
    const alice = await engine.account()
    const { jobId } = await alice.submit("test/text")
    await vi.waitFor(async () => expect((await alice.get(jobId)).status).toBe("completed"))
  })

  it("runs effects against the engine's services", async () => {
    const engine = await start()
    const alice = await engine.account({ credits: 5, maxConcurrentJobs: 1 })
    const account = await engine.run(Effect.flatMap(Admin, (admin) => admin.getAccount(alice.accountId)))
    expect(account).toMatchObject({ balanceMicroCents: 50_000, maxConcurrentJobs: 1 })
  })
})
