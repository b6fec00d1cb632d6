import type { Experimental_VideoModelV4OperationStatusResult as StatusResult, JSONValue } from "@ai-sdk/provider"
import { MockImageModelV4, MockVideoModelV4 } from "ai/test"
import { Effect, Fiber } from "effect"
import { aiSdkProvider } from "genjobs/providers/ai-sdk"
import { afterEach, describe, expect, it } from "vitest"
import { startEngine, type TestEngine } from "../providers/engineHarness.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"

const IMAGE = "mock/image-gen/text-to-image"
const VIDEO = "mock/video-gen/text-to-video"
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])
const MP4 = new Uint8Array([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32])
const LEASE_MS = 300

/** The demo catalog's image and video models, served by the AI SDK bridge registered as "mock". */
const catalog = () => {
  const doc = demoCatalog()
  return {
    ...doc,
    providers: [...doc.providers, { ...doc.providers[0], id: "mock", name: "mock" }],
    models: doc.models
      .filter((model) => model.slug === IMAGE.replace("mock/", "demo/") || model.slug === VIDEO.replace("mock/", "demo/"))
      .map((model) => ({ ...model, slug: model.slug.replace("demo/", "mock/"), providerId: "mock", versions: model.versions.map((v: object) => ({ ...v, provider: { model: "mock-model" } })) }))
  }
}

const response = () => ({ timestamp: new Date(), modelId: "mock-model", headers: undefined })
const pending = (): StatusResult => ({ status: "pending", response: response() })
const done = (): StatusResult => ({ status: "completed", videos: [{ type: "binary", data: MP4, mediaType: "video/mp4" }], warnings: [], response: response() })

/** A video model whose doStart and doStatus answer as `script` says, counting the calls. */
const videoModel = (script: { readonly start?: () => Promise<void>; readonly status: (call: number) => Promise<StatusResult> | StatusResult }) => {
  const seen = { starts: 0, statuses: 0, operations: [] as Array<JSONValue>, keys: [] as Array<string | undefined> }
  const model = new MockVideoModelV4({
    provider: "mock.video",
    doStart: async (options) => {
      seen.starts++
      seen.keys.push(options.headers?.["idempotency-key"])
      await script.start?.()
      return { operation: { taskId: `task-${seen.starts}`, region: "eu" }, warnings: [], response: response() }
    },
    doStatus: async ({ operation }) => {
      seen.operations.push(operation)
      return script.status(++seen.statuses)
    }
  })
  return { model, seen }
}

let engine: TestEngine | undefined
afterEach(async () => {
  await engine?.dispose()
  engine = undefined
})

const start = async (provider: ReturnType<typeof aiSdkProvider>) => {
  engine = await startEngine({ mock: provider }, catalog(), { leaseMs: LEASE_MS, providerPollIntervalMs: 10 })
  return engine
}

const jobOf = async (e: TestEngine, jobId: string) => (await e.call("GET", `/v1/jobs/${jobId}`)).body

describe("aiSdkProvider: AI SDK models as a provider of the engine", () => {
  it("an image model's doGenerate finishes the job in its call; the bytes go to the blob store", async () => {
    const calls: Array<Record<string, unknown>> = []
    const image = new MockImageModelV4({
      provider: "mock.image",
      doGenerate: async (options) => {
        calls.push({ prompt: options.prompt, size: options.size, key: options.headers?.["idempotency-key"], providerOptions: options.providerOptions })
        return { images: [PNG], warnings: [], response: response() }
      }
    })
    const e = await start(aiSdkProvider({ id: "mock", image }))
    const jobId = await e.submit(IMAGE, { prompt: "a fox", width: 64, height: 64 })
    await e.runOne()
    const job = await jobOf(e, jobId)
    expect(job).toMatchObject({ status: "completed", outputs: [{ type: "image", contentType: "image/png" }] })
    // Fields the AI SDK does not name reach the package as its providerOptions.
    expect(calls).toEqual([{ prompt: "a fox", size: undefined, key: expect.any(String), providerOptions: { mock: { width: 64, height: 64 } } }])
  })

  it("a video model's doStart is the durable handle: the operation is stored and doStatus polled to the video", async () => {
    const { model, seen } = videoModel({ status: (n) => (n < 3 ? pending() : done()) })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    const jobId = await e.submit(VIDEO, { prompt: "waves" })
    await e.runOne()
    expect(await jobOf(e, jobId)).toMatchObject({ status: "completed", outputs: [{ type: "video", contentType: "video/mp4" }] })
    expect(seen.starts).toBe(1)
    expect(seen.operations).toEqual([1, 2, 3].map(() => ({ taskId: "task-1", region: "eu" })))
  })

  it("a slow generation (pending for many polls) is followed until it completes", async () => {
    const { model, seen } = videoModel({ status: (n) => (n < 25 ? pending() : done()) })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    const jobId = await e.submit(VIDEO, { prompt: "slow" })
    await e.runOne()
    expect(await jobOf(e, jobId)).toMatchObject({ status: "completed" })
    expect([seen.starts, seen.statuses]).toEqual([1, 25])
  })

  it("a failed status fails the job with the provider's message, refunded", async () => {
    const { model } = videoModel({ status: () => ({ status: "error", error: "content policy", response: response() }) })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    const before = (await e.call("GET", "/v1/account")).body.account.balanceMicroCents
    const jobId = await e.submit(VIDEO, { prompt: "refused" })
    await e.runOne()
    const job = await jobOf(e, jobId)
    expect(job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
    expect(job.error.message).toContain("content policy")
    expect((await e.call("GET", "/v1/account")).body.account.balanceMicroCents).toBe(before)
  })

  it("a crash between doStart and saving its operation: the next worker never starts again, the job fails refunded", async () => {
    let release!: () => void
    const { model, seen } = videoModel({ start: () => new Promise<void>((resolve) => (release = resolve)), status: () => done() })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    const before = (await e.call("GET", "/v1/account")).body.account.balanceMicroCents
    const jobId = await e.submit(VIDEO, { prompt: "crash" })
    const first = e.runInBackground()
    await waitFor(() => seen.starts === 1)
    // The worker dies while the provider is starting: its answer is never saved.
    await Effect.runPromise(Fiber.interrupt(first))
    release()
    await waitFor(async () => {
      await e.runOne()
      return (await jobOf(e, jobId)).status === "failed"
    })
    expect(seen.starts).toBe(1)
    expect(await jobOf(e, jobId)).toMatchObject({ status: "failed" })
    expect((await e.call("GET", "/v1/account")).body.account.balanceMicroCents).toBe(before)
  })

  it("a crash after the operation was saved: the next worker resumes it with doStatus, one start", async () => {
    let block = true
    const { model, seen } = videoModel({ status: () => (block ? new Promise<StatusResult>(() => {}) : done()) })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    const jobId = await e.submit(VIDEO, { prompt: "resume" })
    const first = e.runInBackground()
    await waitFor(() => seen.statuses === 1)
    await Effect.runPromise(Fiber.interrupt(first))
    block = false
    await waitFor(async () => {
      await e.runOne()
      return (await jobOf(e, jobId)).status === "completed"
    })
    expect(seen.starts).toBe(1)
    expect(seen.operations.at(-1)).toEqual({ taskId: "task-1", region: "eu" })
  })

  it("the job's idempotency key goes to doStart as the Idempotency-Key header", async () => {
    const { model, seen } = videoModel({ status: () => done() })
    const e = await start(aiSdkProvider({ id: "mock", video: model, pollIntervalMs: 10 }))
    await e.submit(VIDEO, { prompt: "keyed" })
    await e.runOne()
    expect(seen.keys).toHaveLength(1)
    expect(seen.keys[0]).toMatch(/.+/)
  })
})
