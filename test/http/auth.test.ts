import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { generateKeySecret, hashKeySecret, keyHint } from "../../src/domain/apiKeySecret.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const submitBody = { model: "demo/text-gen/text-to-text", input: { prompt: "hello" } }

const expectEnvelope = (reply: { status: number; body: any; headers: Headers }, status: number, code: string) => {
  expect(reply.status).toBe(status)
  expect(reply.body).toMatchObject({ success: false, error: { code, message: expect.any(String), details: expect.any(Object) } })
  expect(reply.body.requestId).toMatch(/^req_/)
  expect(reply.headers.get("x-request-id")).toBe(reply.body.requestId)
}

describe("API key authentication (spec section 5 and 7)", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("answers UNAUTHORIZED when no key is sent", async () => {
    expectEnvelope(await engine.request("GET", "/v1/jobs"), 401, "UNAUTHORIZED")
  })

  it("answers INVALID_API_KEY for malformed, unknown and non-Bearer credentials", async () => {
    expectEnvelope(await engine.withKey("not-a-key").get("/v1/jobs"), 401, "INVALID_API_KEY")
    expectEnvelope(await engine.withKey(generateKeySecret()).get("/v1/jobs"), 401, "INVALID_API_KEY")
    const { key } = await engine.account()
    expectEnvelope(
      await engine.request("GET", "/v1/jobs", { headers: { authorization: `Basic ${key}` } }),
      401,
      "INVALID_API_KEY"
    )
  })

  it("accepts the key as Bearer and as x-api-key", async () => {
    const { key } = await engine.account()
    expect((await engine.request("GET", "/v1/jobs", { headers: { authorization: `Bearer ${key}` } })).status).toBe(200)
    expect((await engine.request("GET", "/v1/jobs", { headers: { "x-api-key": key } })).status).toBe(200)
  })

  it("answers API_KEY_INACTIVE once the key is deactivated", async () => {
    const acc = await engine.account()
    expect((await acc.get("/v1/jobs")).status).toBe(200)
    const off = await engine.admin("POST", `/admin/keys/${acc.keyId}/deactivate`)
    expect(off.status).toBe(200)
    expect(off.body.active).toBe(false)
    expect(off.body.key).toBeUndefined()
    expectEnvelope(await acc.get("/v1/jobs"), 401, "API_KEY_INACTIVE")
  })

  it("answers API_KEY_EXPIRED for a key past its expiry", async () => {
    const acc = await engine.account()
    const secret = generateKeySecret()
    await engine.runtime.runPromise(ApiKeyRepo.use((repo) =>
      repo.create({
        id: "key_expired" as ApiKeyId,
        accountId: acc.accountId as AccountId,
        name: "old",
        scopes: [],
        allowedIPs: [],
        hash: hashKeySecret(secret),
        hint: keyHint(secret),
        active: true,
        expiresAt: Date.now() - 1_000,
        createdAt: Date.now() - 10_000
      })))
    expectEnvelope(await engine.withKey(secret).get("/v1/jobs"), 401, "API_KEY_EXPIRED")
  })

  it("refuses a key whose expiry is already past at creation", async () => {
    const acc = await engine.account()
    const reply = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, {
      name: "late",
      expiresAt: new Date(Date.now() - 60_000).toISOString()
    })
    expectEnvelope(reply, 400, "VALIDATION_ERROR")
  })

  it("answers OPERATION_NOT_ALLOWED for a key without the operation's scope", async () => {
    const reader = await engine.account({ scopes: ["check_status"] })
    expectEnvelope(await reader.post("/v1/jobs/submit", submitBody), 403, "OPERATION_NOT_ALLOWED")
    expect((await reader.get("/v1/jobs")).status).toBe(200)
    const submitter = await engine.account({ scopes: ["submit_job"] })
    expectEnvelope(await submitter.get("/v1/jobs"), 403, "OPERATION_NOT_ALLOWED")
    expectEnvelope(await submitter.post("/v1/jobs/estimate", submitBody), 403, "OPERATION_NOT_ALLOWED")
    expect((await submitter.post("/v1/jobs/submit", submitBody)).status).toBe(200)
  })

  it("answers IP_NOT_WHITELISTED when the client address is unknown and the key has an allow-list", async () => {
    const acc = await engine.account({ allowedIPs: ["203.0.113.0/24"] })
    const reply = await acc.get("/v1/jobs")
    expectEnvelope(reply, 403, "IP_NOT_WHITELISTED")
  })

  it("refuses invalid allowedIPs entries at key creation", async () => {
    const acc = await engine.account()
    const reply = await engine.admin("POST", `/admin/accounts/${acc.accountId}/keys`, {
      name: "bad",
      allowedIPs: ["10.0.0.0/33", "10.0.0.1"]
    })
    expectEnvelope(reply, 400, "VALIDATION_ERROR")
    expect(reply.body.error.details.invalid).toEqual(["10.0.0.0/33"])
  })

  it("shows the key secret once, at creation, and stores only its hash", async () => {
    const acc = await engine.account()
    const stored = await engine.runtime.runPromise(
      ApiKeyRepo.use((repo) => repo.findByHash(hashKeySecret(acc.key)))
    )
    expect(stored._tag).toBe("Some")
    expect(JSON.stringify(stored)).not.toContain(acc.key)
  })
})

describe("admin API", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("requires the admin token", async () => {
    expectEnvelope(await engine.request("POST", "/admin/accounts", { body: { name: "x" } }), 401, "UNAUTHORIZED")
    expectEnvelope(
      await engine.request("POST", "/admin/accounts", { body: { name: "x" }, headers: { authorization: "Bearer wrong" } }),
      401,
      "INVALID_API_KEY"
    )
  })

  it("creates accounts, credits them through the ledger and reads them back", async () => {
    const created = await engine.admin("POST", "/admin/accounts", { name: "acme", creditsMicroCents: 500 })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ name: "acme", balanceMicroCents: 500, maxConcurrentJobs: 5 })
    expect(created.body.webhookSecret).toMatch(/^whsec_/)
    const credited = await engine.admin("POST", `/admin/accounts/${created.body.id}/credits`, { amountMicroCents: 250 })
    expect(credited.body.balanceMicroCents).toBe(750)
    const ledger = await engine.admin("GET", `/admin/accounts/${created.body.id}/ledger`)
    expect(ledger.body.entries.map((e: any) => [e.kind, e.amountMicroCents])).toEqual([["credit", 500], ["credit", 250]])
    expectEnvelope(await engine.admin("POST", `/admin/accounts/${created.body.id}/credits`, { amountMicroCents: -5 }), 400, "VALIDATION_ERROR")
    expectEnvelope(await engine.admin("GET", "/admin/accounts/acc_missing"), 404, "NOT_FOUND")
  })

  it("rotates an account's webhook secret with an overlap", async () => {
    const created = await engine.admin("POST", "/admin/accounts", { name: "hooks" })
    const rotated = await engine.admin("POST", `/admin/accounts/${created.body.id}/webhook-secret/rotate`, { overlapSeconds: 3600 })
    expect(rotated.status).toBe(200)
    expect(rotated.body.webhookSecret).toMatch(/^whsec_/)
    expect(rotated.body.webhookSecret).not.toBe(created.body.webhookSecret)
    expect(rotated.body.previousWebhookSecret).toBe(created.body.webhookSecret)
    const expires = Date.parse(rotated.body.previousWebhookSecretExpiresAt) - Date.now()
    expect(expires).toBeGreaterThan(3_590_000)
    expect(expires).toBeLessThanOrEqual(3_600_000)
    expectEnvelope(await engine.admin("POST", `/admin/accounts/${created.body.id}/webhook-secret/rotate`, { overlapSeconds: -1 }), 400, "VALIDATION_ERROR")
    expectEnvelope(await engine.admin("POST", "/admin/accounts/acc_missing/webhook-secret/rotate", {}), 404, "NOT_FOUND")
  })

  it("refuses an invalid catalog whole, with the reasons, and keeps the old one", async () => {
    const before = await engine.admin("GET", "/admin/catalog")
    const reply = await engine.admin("PUT", "/admin/catalog", {
      ...before.body,
      models: [{ ...before.body.models[0], providerId: "nobody", currentVersion: "v9" }]
    })
    expectEnvelope(reply, 400, "VALIDATION_ERROR")
    expect(reply.body.error.details.reasons.join("\n")).toMatch(/unknown providerId "nobody"[\s\S]*currentVersion "v9"/)
    expect((await engine.admin("GET", "/admin/catalog")).body).toEqual(before.body)
  })
})
