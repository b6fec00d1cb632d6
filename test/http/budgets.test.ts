import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
/** Text costs 1 credit = 10,000 micro-cents at the default credit value. */
const TEXT_COST = 10_000

const nextMidnight = () => new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 86_400_000).toISOString()
const nextMonth = () => {
  const now = new Date()
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString()
}

describe("budgets on keys and accounts", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("a key's budget refuses the submit that would pass it with 402 BUDGET_EXCEEDED, and a refund gives it back", async () => {
    const acc = await engine.account({ credits: 1_000_000 })
    const patched = await engine.admin("PATCH", `/admin/keys/${acc.keyId}`, { budget: { limitMicroCents: 2 * TEXT_COST, period: "day" } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: acc.keyId, budget: { limitMicroCents: 2 * TEXT_COST, period: "day" } })

    const first = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "one" } })
    expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "two" } })).status).toBe(200)
    const refused = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "three" } })
    expect(refused.status).toBe(402)
    expect(refused.body.error).toMatchObject({
      code: "BUDGET_EXCEEDED",
      details: { budget: "key", period: "day", limitMicroCents: 2 * TEXT_COST, spentMicroCents: 2 * TEXT_COST, resetsAt: nextMidnight() }
    })
    expect((await acc.get("/v1/account")).body.account.balanceMicroCents).toBe(1_000_000 - 2 * TEXT_COST)

    expect((await acc.post(`/v1/jobs/${first.body.jobId}/cancel`)).status).toBe(200)
    expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "three" } })).status).toBe(200)
  })

  it("an account's budget, set at creation, caps all its keys together", async () => {
    const acc = await engine.account({ credits: 1_000_000, budget: { limitMicroCents: TEXT_COST, period: "month" } })
    const other = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, { name: "other", budget: null })
    expect(other.body.budget).toBeNull()
    expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "one" } })).status).toBe(200)
    const refused = await engine.handler(new Request("http://engine.test/v1/jobs/submit", {
      method: "POST",
      headers: { "x-api-key": other.body.key, "content-type": "application/json" },
      body: JSON.stringify({ model: TEXT, input: { prompt: "two" } })
    }))
    expect(refused.status).toBe(402)
    expect((await refused.json()).error.details).toMatchObject({ budget: "account", resetsAt: nextMonth() })

    const removed = await engine.admin("PATCH", `/admin/accounts/${acc.accountId}`, { budget: null })
    expect(removed.body.budget).toBeNull()
    expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "two" } })).status).toBe(200)
  })

  it("GET /v1/account shows the key's and the account's budgets with what is spent and when it resets", async () => {
    const acc = await engine.account({ credits: 1_000_000, budget: { limitMicroCents: 500_000, period: "total" } })
    await engine.admin("PATCH", `/admin/keys/${acc.keyId}`, { budget: { limitMicroCents: 50_000, period: "day" } })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "one" } })
    const overview = (await acc.get("/v1/account")).body
    expect(overview.account.budget).toEqual({ limitMicroCents: 500_000, period: "total", spentMicroCents: TEXT_COST, resetsAt: null })
    expect(overview.key.budget).toEqual({ limitMicroCents: 50_000, period: "day", spentMicroCents: TEXT_COST, resetsAt: nextMidnight() })
  })

  it("refuses a bad budget or an unknown key in the spec's envelope, changing nothing", async () => {
    const acc = await engine.account({})
    for (const budget of [{ limitMicroCents: -1, period: "day" }, { limitMicroCents: 1, period: "week" }, { limitMicroCents: 1.5, period: "day" }]) {
      const reply = await engine.admin("PATCH", `/admin/keys/${acc.keyId}`, { budget })
      expect(reply.status).toBe(400)
      expect(reply.body.error.code).toBe("VALIDATION_ERROR")
    }
    expect((await engine.admin("PATCH", `/admin/keys/${acc.keyId}`, { budget: null, name: "x" })).status).toBe(400)
    expect((await engine.admin("PATCH", "/admin/keys/key_missing", { budget: null })).body.error.code).toBe("NOT_FOUND")
    const keys = await engine.admin("GET", `/admin/accounts/${acc.accountId}/keys`)
    expect(keys.body.keys[0].budget).toBeNull()
  })

  it("records the key's budget change in the audit log", async () => {
    const acc = await engine.account({})
    await engine.admin("PATCH", `/admin/keys/${acc.keyId}`, { budget: { limitMicroCents: 7, period: "total" } })
    const log = await engine.admin("GET", `/admin/audit?action=key.update&target=${acc.keyId}`)
    expect(log.body.entries).toHaveLength(1)
    expect(log.body.entries[0].summary).toMatchObject({ budget: { limitMicroCents: 7, period: "total" } })
  })
})
