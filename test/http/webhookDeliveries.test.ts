import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { failDelivery, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

describe("webhook deliveries API", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  /** Runs `n` jobs with a webhook to their end, so each has a pending delivery. */
  const jobsWithWebhooks = async (acc: Awaited<ReturnType<HttpEngine["account"]>>, n: number) => {
    const ids: Array<string> = []
    for (let i = 0; i < n; i++) {
      const reply = await acc.post("/v1/jobs/submit", {
        model: "demo/text-gen/text-to-text",
        input: { prompt: `p${i}`, ...(i % 2 === 1 ? { demoFail: true } : {}) },
        webhookUrl: `https://hooks.genjobs.test/${i}`
      })
      ids.push(reply.body.jobId)
    }
    while (await engine.work()) { /* run them all */ }
    return ids
  }

  it("lists the account's deliveries newest first, filtered and paged", async () => {
    const acc = await engine.account()
    const other = await engine.account()
    const jobIds = await jobsWithWebhooks(acc, 3)
    const all = await acc.get("/v1/webhooks/deliveries")
    expect(all.status).toBe(200)
    expect(all.body.deliveries.map((d: any) => d.jobId)).toEqual([...jobIds].reverse())
    expect(all.body.deliveries[0]).toMatchObject({ status: "pending", url: "https://hooks.genjobs.test/2", attempts: [] })
    const one = await acc.get(`/v1/webhooks/deliveries?jobId=${jobIds[1]}`)
    expect(one.body.deliveries.map((d: any) => d.jobId)).toEqual([jobIds[1]])
    const page = await acc.get("/v1/webhooks/deliveries?limit=2")
    expect(page.body.hasMore).toBe(true)
    const rest = await acc.get(`/v1/webhooks/deliveries?limit=2&cursor=${page.body.nextCursor}`)
    expect([...page.body.deliveries, ...rest.body.deliveries].map((d: any) => d.jobId)).toEqual([...jobIds].reverse())
    expect((await other.get("/v1/webhooks/deliveries")).body.deliveries).toEqual([])
    expectError(await acc.get("/v1/webhooks/deliveries?status=lost"), 400, "VALIDATION_ERROR")
    const submitter = await engine.account({ scopes: ["submit_job"] })
    expectError(await submitter.get("/v1/webhooks/deliveries"), 403, "OPERATION_NOT_ALLOWED")
  })

  it("retries a failed delivery once more, and only a failed one of the caller's own", async () => {
    // A store of its own, so the only due delivery is this test's.
    await engine.dispose()
    engine = await makeHttpEngine()
    const acc = await engine.account()
    const [jobId] = await jobsWithWebhooks(acc, 1)
    const [delivery] = (await acc.get(`/v1/webhooks/deliveries?jobId=${jobId}`)).body.deliveries
    expectError(await acc.post(`/v1/webhooks/deliveries/${delivery.id}/retry`), 409, "DELIVERY_NOT_RETRYABLE")
    await failDelivery(engine, delivery.id)
    const failed = await acc.get("/v1/webhooks/deliveries?status=failed")
    expect(failed.body.deliveries).toEqual([expect.objectContaining({ id: delivery.id, status: "failed", nextAttemptAt: null })])
    expect(failed.body.deliveries[0].attempts[0]).toMatchObject({ attempt: 6, statusCode: 500, error: "HTTP 500", responseBody: "no" })
    const stranger = await engine.account()
    expectError(await stranger.post(`/v1/webhooks/deliveries/${delivery.id}/retry`), 404, "NOT_FOUND")
    const reader = await engine.account({ scopes: ["check_status"] })
    expectError(await reader.post(`/v1/webhooks/deliveries/${delivery.id}/retry`), 403, "OPERATION_NOT_ALLOWED")
    const retried = await acc.post(`/v1/webhooks/deliveries/${delivery.id}/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body).toMatchObject({ id: delivery.id, status: "pending" })
    expect(retried.body.nextAttemptAt).not.toBeNull()
    expectError(await acc.post("/v1/webhooks/deliveries/whd_missing/retry"), 404, "NOT_FOUND")
  })
})
