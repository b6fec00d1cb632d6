/**
 * The failure taxonomy (issue 38) where a client and an operator see it: a job refused by its
 * provider's safety system shows `type` and `retryable` beside the spec's `code` and `message` in
 * GET /v1/jobs/{jobId}, the list, the status stream, the webhook's body, the admin API the
 * dashboard reads, and the OpenAPI document.
 */
import { Layer } from "effect"
import { type Engine, makeEngine, WebhookSender } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { openaiProvider } from "genjobs/providers/openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeRecordingWebhookSender } from "../../adapters/testing/RecordingWebhookSender.js"
import { readEvents } from "../../src/client/eventStream.js"
import { failureTypes } from "../../src/domain/failureTaxonomy.js"
import { type OpenAISimulator, startOpenAISimulator } from "../simulators/openai.js"
import { demoCatalog } from "../support/demoCatalog.js"

const ORIGIN = "http://engine.test"
const ADMIN = "admin-token"
const MODEL = "openai/gpt-image-1"

/** The demo catalog's image model, served by OpenAI's Images API (the simulator). */
const catalog = () => {
  const doc = demoCatalog()
  return {
    ...doc,
    providers: [...doc.providers, { ...doc.providers[0], id: "openai", name: "OpenAI" }],
    models: doc.models
      .filter((model) => model.slug === "demo/image-gen/text-to-image")
      .map((model) => ({ ...model, slug: MODEL, providerId: "openai", versions: model.versions.map((v: object) => ({ ...v, provider: { model: "gpt-image-1" } })) }))
  }
}

describe("a failed job's failure type and retryability", () => {
  const webhooks = makeRecordingWebhookSender()
  let sim: OpenAISimulator
  let engine: Engine
  let key: string

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await engine.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }),
      { remoteAddress: "127.0.0.1" }
    )
    return { status: response.status, body: await response.json() as any }
  }

  /** Polls `probe` every 20 ms until it answers something (10 s at most). */
  const until = async <A>(probe: () => Promise<A | undefined> | A | undefined): Promise<A> => {
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const found = await probe()
      if (found !== undefined) return found
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error("timed out")
  }

  beforeAll(async () => {
    sim = await startOpenAISimulator()
    engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: ORIGIN }),
      providers: { openai: openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url }) },
      webhookSender: Layer.succeed(WebhookSender, webhooks.sender),
      http: { adminToken: ADMIN },
      workers: 1,
      settings: { pollIntervalMs: 20 }
    })
    const loaded = await call("PUT", "/admin/catalog", ADMIN, catalog())
    expect(loaded.status, JSON.stringify(loaded.body)).toBe(200)
    const account = await call("POST", "/admin/accounts", ADMIN, { name: "t", creditsMicroCents: 100_000_000 })
    key = (await call("POST", `/admin/accounts/${account.body.id}/keys`, ADMIN, { name: "k" })).body.key
  })
  afterAll(async () => {
    await engine?.dispose()
    await sim?.close()
  })

  it("shows content_blocked, not retryable, in the job, the list, the stream, the webhook and the admin API", async () => {
    const submitted = await call("POST", "/v1/jobs/submit", key, {
      model: MODEL,
      input: { prompt: "[reject] a forbidden picture" },
      webhookUrl: "https://hooks.example.com/genjobs"
    })
    expect(submitted.status).toBe(200)
    const jobId = submitted.body.jobId as string
    const failed = await until(async () => {
      const job = (await call("GET", `/v1/jobs/${jobId}`, key)).body
      return job.status === "failed" ? job : undefined
    })
    const error = { code: "GENERATION_FAILED", message: expect.stringContaining("safety system"), type: "content_blocked", retryable: false }
    expect(failed.error).toEqual(error)

    const listed = (await call("GET", "/v1/jobs?status=failed", key)).body.jobs
    expect(listed.find((j: any) => j.jobId === jobId).error).toEqual(error)

    const stream = await engine.fetch(new Request(`${ORIGIN}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` } }))
    const events = []
    for await (const event of readEvents(stream.body!)) events.push(event)
    expect(JSON.parse(events.at(-1)!.data).error).toEqual(error)

    const hook = await until(() => webhooks.sent.find((w) => w.payload.jobId === jobId))
    expect(hook.payload).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", type: "content_blocked", retryable: false } })

    expect((await call("GET", `/admin/jobs/${jobId}`, ADMIN)).body.error).toEqual(error)
    const adminList = (await call("GET", "/admin/jobs?status=failed", ADMIN)).body.jobs
    expect(adminList.find((j: any) => j.jobId === jobId).failureType).toBe("content_blocked")
  })

  it("a job that is not failed has no failure type in the admin list", async () => {
    const submitted = await call("POST", "/v1/jobs/submit", key, { model: MODEL, input: { prompt: "a lighthouse" } })
    const jobId = submitted.body.jobId as string
    await until(async () => ((await call("GET", `/v1/jobs/${jobId}`, key)).body.status === "completed" ? true : undefined))
    const adminList = (await call("GET", "/admin/jobs?status=completed", ADMIN)).body.jobs
    expect(adminList.find((j: any) => j.jobId === jobId).failureType).toBeNull()
    expect((await call("GET", `/v1/jobs/${jobId}`, key)).body.error).toBeNull()
  })

  it("documents the types, with descriptions, in the OpenAPI document", async () => {
    const doc = JSON.stringify((await call("GET", "/v1/openapi.json", key)).body)
    for (const type of failureTypes) expect(doc).toContain(`"${type}"`)
    expect(doc).toContain("Why the job failed: provider_unavailable")
    expect(doc).toContain("Whether the same submit would likely succeed later")
  })
})
