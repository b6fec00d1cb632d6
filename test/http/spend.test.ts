import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
/** Text costs 1 credit = 10,000 micro-cents at the default credit value. */
const TEXT_COST = 10_000

const today = () => new Date().toISOString().slice(0, 10)

describe("spend rollups", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("GET /admin/spend sums charges, refunds, jobs and outcomes by key, model or day, of one account or all", async () => {
    const acc = await engine.account({ credits: 1_000_000 })
    const second = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, { name: "second" })
    const submitted = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "one" } })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "two" } })
    await engine.handler(new Request("http://engine.test/v1/jobs/submit", {
      method: "POST",
      headers: { "x-api-key": second.body.key, "content-type": "application/json" },
      body: JSON.stringify({ model: TEXT, input: { prompt: "three" } })
    }))
    await acc.post(`/v1/jobs/${submitted.body.jobId}/cancel`)

    const byKey = await engine.admin("GET", `/admin/spend?groupBy=key&accountId=${acc.accountId}`)
    expect(byKey.status).toBe(200)
    expect(byKey.body.groupBy).toEqual(["key"])
    expect(byKey.body.groups).toEqual(
      [
        { key: acc.keyId, chargedMicroCents: 2 * TEXT_COST, refundedMicroCents: TEXT_COST, spentMicroCents: TEXT_COST, jobs: 2, failed: 0, cancelled: 1 },
        { key: second.body.id, chargedMicroCents: TEXT_COST, refundedMicroCents: 0, spentMicroCents: TEXT_COST, jobs: 1, failed: 0, cancelled: 0 }
      ].sort((a, b) => (a.key < b.key ? -1 : 1))
    )
    const byDayModel = await engine.admin("GET", `/admin/spend?groupBy=day,model&accountId=${acc.accountId}`)
    expect(byDayModel.body.groups).toEqual([
      { day: today(), model: TEXT, chargedMicroCents: 3 * TEXT_COST, refundedMicroCents: TEXT_COST, spentMicroCents: 2 * TEXT_COST, jobs: 3, failed: 0, cancelled: 1 }
    ])
    const all = await engine.admin("GET", "/admin/spend?groupBy=account")
    expect(all.body.groups.find((g: { account: string }) => g.account === acc.accountId)).toMatchObject({ jobs: 3 })
  })

  it("GET /v1/account/spend answers the caller's own account to a key with check_status", async () => {
    const acc = await engine.account({ credits: 1_000_000, scopes: ["submit_job", "check_status"] })
    const other = await engine.account({ credits: 1_000_000 })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "mine" } })
    await other.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "theirs" } })
    const reply = await acc.get("/v1/account/spend?groupBy=model")
    expect(reply.status).toBe(200)
    expect(reply.body.groups).toEqual([
      { model: TEXT, chargedMicroCents: TEXT_COST, refundedMicroCents: 0, spentMicroCents: TEXT_COST, jobs: 1, failed: 0, cancelled: 0 }
    ])
    expect((await acc.get("/v1/account/spend?groupBy=account")).body.error).toMatchObject({ code: "VALIDATION_ERROR" })

    const noScope = await engine.account({ scopes: ["submit_job"] })
    const refused = await noScope.get("/v1/account/spend")
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe("OPERATION_NOT_ALLOWED")
  })

  it("refuses a range over 366 days, a reversed one and an unknown grouping, in the spec's envelope", async () => {
    for (const query of [
      "from=2024-01-01T00:00:00Z&to=2025-01-02T00:00:01Z",
      "from=2025-02-01&to=2025-01-01",
      "groupBy=week",
      "groupBy=day,model,key",
      "from=yesterday"
    ]) {
      const reply = await engine.admin("GET", `/admin/spend?${query}`)
      expect(reply.status).toBe(400)
      expect(reply.body.error.code).toBe("VALIDATION_ERROR")
    }
    expect((await engine.admin("GET", "/admin/spend?from=2024-01-01T00:00:00Z&to=2025-01-01T00:00:00Z")).status).toBe(200)
    expect((await engine.admin("GET", "/admin/spend?accountId=acc_missing")).body.error.code).toBe("NOT_FOUND")
  })
})
