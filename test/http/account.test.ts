import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
/** Text costs 1 credit = 10,000 micro-cents at the default credit value. */
const TEXT_COST = 10_000

describe("GET /v1/account", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("shows the balance, the limits, the jobs in flight and the calling key", async () => {
    const acc = await engine.account({ credits: 1_000_000, maxConcurrentJobs: 3 })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "one" } })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "two" } })
    expect(await engine.work()).toBe(true)

    const reply = await acc.get("/v1/account")
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      account: {
        id: acc.accountId,
        name: "test",
        balanceMicroCents: 1_000_000 - 2 * TEXT_COST,
        maxConcurrentJobs: 3,
        jobsInFlight: 1,
        budget: null
      },
      key: { id: acc.keyId, name: "k", scopes: [], allowedIPs: [], expiresAt: null, budget: null }
    })
    expect(reply.headers.get("x-request-id")).toMatch(/^req_/)
  })

  it("answers any active key whatever its scopes, and tells it which key it is", async () => {
    const acc = await engine.account({ scopes: ["list_models"] })
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
    const created = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, {
      name: "office",
      scopes: ["check_status"],
      allowedIPs: ["10.0.0.0/8"],
      expiresAt
    })
    const fromOffice = await engine.handler(
      new Request(`${BASE}/v1/account`, { headers: { "x-api-key": created.body.key } }),
      { remoteAddress: "10.1.2.3" }
    )
    expect(fromOffice.status).toBe(200)
    expect((await fromOffice.json()).key).toEqual({
      id: created.body.id,
      name: "office",
      scopes: ["check_status"],
      allowedIPs: ["10.0.0.0/8"],
      expiresAt,
      budget: null
    })
    expect((await acc.get("/v1/account")).body.key).toMatchObject({ id: acc.keyId, scopes: ["list_models"] })
  })

  it("shows no secret: neither the webhook secret nor anything of the key's", async () => {
    const acc = await engine.account()
    const admin = await engine.admin("GET", `/admin/accounts/${acc.accountId}`)
    const text = JSON.stringify((await acc.get("/v1/account")).body)
    expect(text).not.toContain(admin.body.webhookSecret)
    expect(text).not.toContain("whsec_")
    expect(text).not.toContain(acc.key)
    expect(text).not.toMatch(/hash|hint|secret/i)
  })

  it("is refused without a valid active key", async () => {
    expect((await engine.request("GET", "/v1/account")).body.error.code).toBe("UNAUTHORIZED")
    const acc = await engine.account()
    await engine.admin("POST", `/admin/keys/${acc.keyId}/deactivate`)
    const refused = await acc.get("/v1/account")
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 401, code: "API_KEY_INACTIVE" })
  })
})
