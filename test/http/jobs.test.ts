import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
const IMAGE = "demo/image-gen/text-to-image"
/** Text costs 1 credit = 10,000 micro-cents at the default credit value. */
const TEXT_COST = 10_000

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
  expect(reply.body.success).toBe(false)
}

describe("jobs API end to end", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const balance = async (accountId: string) =>
    (await engine.admin("GET", `/admin/accounts/${accountId}`)).body.balanceMicroCents as number

  it("submits, runs and serves an image job", async () => {
    const acc = await engine.account({ credits: 1_000_000 })
    const submitted = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "a red fox", width: 64, height: 48 } })
    expect(submitted.status).toBe(200)
    expect(submitted.body).toMatchObject({ status: "pending", costMicroCents: 50_000 })
    expect(submitted.body.jobId).toMatch(/^job_/)
    expect(submitted.body.requestId).toBe(submitted.headers.get("x-request-id"))
    expect(Date.parse(submitted.body.estimatedCompletionTime)).toBeGreaterThan(Date.now() - 1000)
    expect(await balance(acc.accountId)).toBe(950_000)

    const pending = await acc.get(`/v1/jobs/${submitted.body.jobId}`)
    expect(pending.body).toMatchObject({ status: "pending", progress: 0, output: null, outputs: null, error: null, completedAt: null })

    expect(await engine.work()).toBe(true)
    const done = await acc.get(`/v1/jobs/${submitted.body.jobId}`)
    expect(done.body).toMatchObject({ status: "completed", progress: 100, error: null })
    expect(done.body.output).toBe(done.body.outputs[0].url)
    expect(done.body.outputs[0]).toMatchObject({ type: "image", metadata: { width: 64, height: 48, format: "png" } })
    expect(Date.parse(done.body.completedAt)).toBeGreaterThanOrEqual(Date.parse(done.body.createdAt))

    const file = await engine.request("GET", new URL(done.body.output).pathname)
    expect(file.status).toBe(200)
    expect(file.headers.get("content-type")).toBe("image/png")
  })

  it("fails a job the provider refuses with GENERATION_FAILED and refunds it", async () => {
    const acc = await engine.account({ credits: 100_000 })
    const submitted = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x", demoFail: true } })
    expect(await balance(acc.accountId)).toBe(100_000 - TEXT_COST)
    await engine.work()
    const failed = await acc.get(`/v1/jobs/${submitted.body.jobId}`)
    expect(failed.body).toMatchObject({ status: "failed", progress: 0, output: null, error: { code: "GENERATION_FAILED" } })
    expect(await balance(acc.accountId)).toBe(100_000)
  })

  it("cancels a pending job with a refund and refuses to cancel it twice", async () => {
    const acc = await engine.account({ credits: 100_000 })
    const { body } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    const cancelled = await acc.post(`/v1/jobs/${body.jobId}/cancel`)
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toEqual({ jobId: body.jobId, status: "cancelled", refundedMicroCents: TEXT_COST })
    expect(await balance(acc.accountId)).toBe(100_000)
    expectError(await acc.post(`/v1/jobs/${body.jobId}/cancel`), 409, "JOB_CANNOT_BE_CANCELLED")
    expect((await acc.get(`/v1/jobs/${body.jobId}`)).body).toMatchObject({ status: "cancelled", progress: 0 })
  })

  it("refuses to cancel a completed job", async () => {
    const acc = await engine.account()
    const { body } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    await engine.work()
    expectError(await acc.post(`/v1/jobs/${body.jobId}/cancel`), 409, "JOB_CANNOT_BE_CANCELLED")
  })

  it("answers JOB_NOT_FOUND for unknown jobs and UNAUTHORIZED_ACCESS for other accounts' jobs", async () => {
    const owner = await engine.account()
    const stranger = await engine.account()
    const { body } = await owner.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    expectError(await owner.get("/v1/jobs/job_nope"), 404, "JOB_NOT_FOUND")
    expectError(await owner.post("/v1/jobs/job_nope/cancel"), 404, "JOB_NOT_FOUND")
    expectError(await stranger.get(`/v1/jobs/${body.jobId}`), 403, "UNAUTHORIZED_ACCESS")
    expectError(await stranger.post(`/v1/jobs/${body.jobId}/cancel`), 403, "UNAUTHORIZED_ACCESS")
    expect((await owner.get(`/v1/jobs/${body.jobId}`)).body.status).toBe("pending")
  })

  it("answers MODEL_NOT_FOUND for unknown models and versions", async () => {
    const acc = await engine.account()
    expectError(await acc.post("/v1/jobs/submit", { model: "demo/nothing", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/submit", { model: TEXT, version: "v9", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/estimate", { model: "demo/nothing" }), 404, "MODEL_NOT_FOUND")
  })

  it("answers INVALID_INPUT with the failing paths, and for a non-https webhookUrl", async () => {
    const acc = await engine.account()
    const missing = await acc.post("/v1/jobs/submit", { model: TEXT, input: { promt: "typo" } })
    expectError(missing, 400, "INVALID_INPUT")
    expect(missing.body.error.details.errors.map((e: any) => e.path).sort()).toEqual(["/prompt", "/promt"])
    const wrongType = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x", width: "big" } })
    expectError(wrongType, 400, "INVALID_INPUT")
    expect(wrongType.body.error.details.errors[0].path).toBe("/width")
    const webhook = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" }, webhookUrl: "http://receiver.genjobs.test/hook" })
    expectError(webhook, 400, "INVALID_INPUT")
    expect(webhook.body.error.details.field).toBe("webhookUrl")
    const jobs = await acc.get("/v1/jobs")
    expect(jobs.body.jobs).toEqual([])
  })

  it("refuses a webhookUrl holding a control character, and keeps the URL as parsed, the one called", async () => {
    const acc = await engine.account()
    const submitWith = (webhookUrl: string) => acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" }, webhookUrl })
    for (const url of ["https://hooks.test/a\r\nb", "https://hooks.test/in\n", "https://hoo\tks.test/", "\u0001https://hooks.test/", "https://hooks.test/\u007f", "https://hooks.test/\u0085"]) {
      const refused = await submitWith(url)
      expectError(refused, 400, "INVALID_INPUT")
      expect(refused.body.error.details.field).toBe("webhookUrl")
    }
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])

    const accepted = await submitWith(" https://Hooks.TEST:443/in/../hook?x=ü")
    expect(accepted.status).toBe(200)
    const href = "https://hooks.test/hook?x=%C3%BC"
    expect((await engine.admin("GET", `/admin/jobs/${accepted.body.jobId}`)).body.webhookUrl).toBe(href)
    while (await engine.work()) { /* this job, and any other test's left waiting */ }
    const deliveries = (await acc.get(`/v1/webhooks/deliveries?jobId=${accepted.body.jobId}`)).body.deliveries
    expect(deliveries.map((d: any) => d.url)).toEqual([href])
  })

  it("answers VALIDATION_ERROR for malformed bodies and queries", async () => {
    const acc = await engine.account()
    expectError(await engine.request("POST", "/v1/jobs/submit", {
      rawBody: "{not json",
      headers: { authorization: `Bearer ${acc.key}` }
    }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/jobs/submit", { model: TEXT }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/jobs/submit", { input: { prompt: "x" } }), 400, "VALIDATION_ERROR")
    expectError(await acc.get("/v1/jobs?limit=101"), 400, "VALIDATION_ERROR")
    expectError(await acc.get("/v1/jobs?limit=0"), 400, "VALIDATION_ERROR")
    expectError(await acc.get("/v1/jobs?cursor=bogus"), 400, "VALIDATION_ERROR")
    expectError(await acc.get("/v1/jobs?status=done"), 400, "VALIDATION_ERROR")
  })

  it("answers MODEL_ACCESS_DENIED for segment and private models the account may not use", async () => {
    const plain = await engine.account()
    const pro = await engine.account({ segments: ["pro"] })
    const insider = await engine.account({ allowedModels: ["demo/text-gen-private/text-to-text"] })
    const segmentJob = { model: "demo/image-gen-pro/text-to-image", input: { prompt: "x" } }
    const privateJob = { model: "demo/text-gen-private/text-to-text", input: { prompt: "x" } }
    expectError(await plain.post("/v1/jobs/submit", segmentJob), 403, "MODEL_ACCESS_DENIED")
    expectError(await plain.post("/v1/jobs/submit", privateJob), 403, "MODEL_ACCESS_DENIED")
    expectError(await pro.post("/v1/jobs/submit", privateJob), 403, "MODEL_ACCESS_DENIED")
    expect((await pro.post("/v1/jobs/submit", segmentJob)).status).toBe(200)
    expect((await insider.post("/v1/jobs/submit", privateJob)).status).toBe(200)
  })

  it("answers INSUFFICIENT_BALANCE and charges nothing", async () => {
    const acc = await engine.account({ credits: TEXT_COST - 1 })
    expectError(await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } }), 402, "INSUFFICIENT_BALANCE")
    expect(await balance(acc.accountId)).toBe(TEXT_COST - 1)
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])
  })

  it("answers CONCURRENT_JOBS_EXCEEDED at the plan's maximum and frees the slot on cancel", async () => {
    const acc = await engine.account({ maxConcurrentJobs: 2 })
    const first = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "1" } })
    await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "2" } })
    expectError(await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "3" } }), 429, "CONCURRENT_JOBS_EXCEEDED")
    await acc.post(`/v1/jobs/${first.body.jobId}/cancel`)
    expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "3" } })).status).toBe(200)
  })

  it("uses the current version by default and marks deprecated versions with a Deprecation header", async () => {
    const acc = await engine.account()
    const current = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })
    expect(current.headers.get("deprecation")).toBeNull()
    expect(current.body.costMicroCents).toBe(50_000)
    const old = await acc.post("/v1/jobs/submit", { model: IMAGE, version: "v1", input: { prompt: "x" } })
    expect(old.status).toBe(200)
    // RFC 9745: a Structured Field date, deprecated as of the answer; no sunset date was set.
    const deprecatedAt = Number(old.headers.get("deprecation")?.replace(/^@/, ""))
    expect(Math.abs(deprecatedAt - Date.now() / 1000)).toBeLessThan(60)
    expect(old.headers.get("sunset")).toBeNull()
    expect(old.body.costMicroCents).toBe(40_000)
    const alias = await acc.post("/v1/jobs/submit", { modelSlug: IMAGE, modelVersion: "v1", input: { prompt: "x" } })
    expect(alias.body.costMicroCents).toBe(40_000)
  })

  it("estimates with the account's discount and charges and refunds the discounted cost", async () => {
    const acc = await engine.account({ credits: 1_000_000, discounts: [{ type: "volume", percentage: 25 }] })
    const estimate = await acc.post("/v1/jobs/estimate", { model: IMAGE })
    expect(estimate.status).toBe(200)
    expect(estimate.body).toEqual({
      baseCostMicroCents: 50_000,
      estimatedCostMicroCents: 37_500,
      breakdown: [{ component: "base", costMicroCents: 50_000 }],
      hasDiscount: true,
      discounted: { type: "volume", percentage: 25, savedMicroCents: 12_500 }
    })
    const submitted = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })
    expect(submitted.body.costMicroCents).toBe(37_500)
    expect(await balance(acc.accountId)).toBe(962_500)
    expect((await acc.post(`/v1/jobs/${submitted.body.jobId}/cancel`)).body.refundedMicroCents).toBe(37_500)
    expect(await balance(acc.accountId)).toBe(1_000_000)
  })

  it("replays an Idempotency-Key with the same body and refuses it with another body", async () => {
    const acc = await engine.account({ credits: 100_000 })
    const headers = { "idempotency-key": "order-42" }
    const first = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } }, headers)
    const again = await acc.post("/v1/jobs/submit", { input: { prompt: "x" }, model: TEXT }, headers)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(await balance(acc.accountId)).toBe(100_000 - TEXT_COST)
    expectError(await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "y" } }, headers), 409, "IDEMPOTENCY_KEY_REUSED")
    const other = await engine.account()
    expect((await other.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "y" } }, headers)).status).toBe(200)
  })
})

describe("per-version rate limits", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
    const catalog = demoCatalog()
    const text = catalog.models.find((m) => m.slug === TEXT)!
    text.versions[0].rateLimits = { requestsPerMinute: 2, requestsPerDay: 100 }
    const reply = await engine.admin("PUT", "/admin/catalog", catalog)
    if (reply.status !== 200) throw new Error(JSON.stringify(reply.body))
  })
  afterAll(() => engine.dispose())

  it("answers RATE_LIMIT_EXCEEDED with Retry-After, and a refused request costs nothing", async () => {
    const acc = await engine.account({ credits: 100_000 })
    for (const prompt of ["1", "2"]) expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt } })).status).toBe(200)
    const limited = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "3" } })
    expectError(limited, 429, "RATE_LIMIT_EXCEEDED")
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(100_000 - 2 * TEXT_COST)
    const other = await engine.account()
    expect((await other.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "1" } })).status).toBe(200)
  })
})
