import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { verifyWebhook } from "genjobs"
import { type AsyncTestAccount, type AsyncTestEngine, makeTestEngine } from "genjobs/testing"

const HOOK = "https://app.example/hooks/genjobs"

let engine: AsyncTestEngine
let alice: AsyncTestAccount
beforeEach(async () => {
  engine = await makeTestEngine()
  alice = await engine.account()
})
afterEach(() => engine.dispose())

describe("recorded webhooks", () => {
  it("records the signed webhook of a finished job instead of sending it", async () => {
    const { jobId } = await alice.submit("test/image", { prompt: "a fox" }, { webhookUrl: HOOK })
    expect(await engine.webhooks.sent()).toEqual([])
    await engine.runJobs()
    const [webhook, ...others] = await engine.webhooks.sent()
    expect(others).toEqual([])
    expect(webhook!.url).toBe(HOOK)
    expect(webhook!.payload).toMatchObject({ jobId, status: "completed", output: { type: "image", contentType: "image/png" } })
    expect(webhook!.headers["x-webhook-attempt"]).toBe("1")
    expect(verifyWebhook({ secret: alice.webhookSecret, headers: webhook!.headers, body: webhook!.body })).toMatchObject({ ok: true })
  })

  it("records failures, and retries later when the receiver answers an error", async () => {
    engine.provider.failNext("no luck")
    engine.webhooks.respondWith(503)
    const { jobId } = await alice.submit("test/text", {}, { webhookUrl: HOOK })
    await engine.runJobs()
    const sent = await engine.webhooks.sent()
    expect(sent.map((w) => w.payload)).toMatchObject([{ jobId, status: "failed", error: { code: "GENERATION_FAILED", message: "no luck" } }])
    const deliveries = await alice.request("GET", "/v1/webhooks/deliveries")
    expect(deliveries.body.deliveries).toMatchObject([{ jobId, status: "pending", attempts: [{ statusCode: 503 }] }])
    // The retry is not due yet: nothing more is recorded.
    expect(await engine.webhooks.sent()).toHaveLength(1)
  })
})
