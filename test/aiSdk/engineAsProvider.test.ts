import { APICallError } from "@ai-sdk/provider"
import { experimental_generateVideo, generateImage, generateSpeech } from "ai"
import type { Engine } from "genjobs"
import { createGenjobs } from "genjobs/ai-sdk"
import { createClient, type FetchLike } from "genjobs/client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newKey, type Target } from "../client/suite.js"
import { webHandlerTarget } from "../client/webHandlerTarget.js"

const IMAGE = "demo/image-gen/text-to-image"
const VIDEO = "demo/video-gen/text-to-video"
const AUDIO = "demo/audio-gen/text-to-audio"
const PNG = [0x89, 0x50, 0x4e, 0x47]

let engine: Engine
let target: Target
beforeAll(async () => {
  ;({ engine, target } = await webHandlerTarget(2))
})
afterAll(async () => {
  await engine.dispose()
})

/** A fetch that counts submits and, while `drop` says so, loses a submit's answer after the engine committed it. */
const countingFetch = (drop: { remaining: number }) => {
  const seen = { submits: 0, keys: new Set<string>() }
  const fetch: FetchLike = async (url, init) => {
    const response = await target.fetch(url, init)
    if (url.endsWith("/v1/jobs/submit")) {
      seen.submits++
      seen.keys.add(new Headers(init.headers).get("idempotency-key") ?? "")
      if (drop.remaining > 0) {
        drop.remaining--
        await response.body?.cancel()
        throw new TypeError("fetch failed: the connection was reset before the answer")
      }
    }
    return response
  }
  return { fetch, seen }
}

const setup = async (options: { readonly drop?: number; readonly creditsMicroCents?: number } = {}) => {
  const apiKey = await newKey(target, options.creditsMicroCents)
  const { fetch, seen } = countingFetch({ remaining: options.drop ?? 0 })
  // retries: 0 leaves every retry to the AI SDK, whose retries are what the key must survive.
  const genjobs = createGenjobs({ baseUrl: target.baseUrl, apiKey, fetch, retries: 0 })
  const client = createClient({ baseUrl: target.baseUrl, apiKey, fetch: target.fetch })
  return { apiKey, genjobs, client, seen }
}

describe("genjobs/ai-sdk: the engine as an AI SDK provider", () => {
  it("generateImage makes one job per image and returns their PNG bytes", async () => {
    const { client, genjobs } = await setup()
    const result = await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "a fox", n: 2, size: "32x32" })
    expect(result.images).toHaveLength(2)
    for (const image of result.images) expect([...image.uint8Array.slice(0, 4)]).toEqual(PNG)
    const jobs = (await client.list()).jobs
    expect(jobs.map((job) => [job.model, job.status])).toEqual([[IMAGE, "completed"], [IMAGE, "completed"]])
  })

  it("experimental_generateVideo starts a job (the operation is its id) and polls it to the video", async () => {
    const { client, genjobs } = await setup()
    const result = await experimental_generateVideo({ model: genjobs.videoModel(VIDEO), prompt: "waves", poll: { intervalMs: 50 } })
    expect(result.videos).toHaveLength(1)
    const [summary] = (await client.list()).jobs
    const job = await client.get(summary!.jobId)
    expect(result.providerMetadata).toMatchObject({ genjobs: { jobId: job.jobId } })
    // The demo's video is an animated PNG: the bytes and the type are the job's output's.
    const output = job.outputs![0]!
    expect(output.type).toBe("video")
    expect(result.videos[0]!.mediaType).toBe(output.contentType)
    expect(result.videos[0]!.uint8Array).toEqual(new Uint8Array(await (await target.fetch(output.url, { method: "GET" })).arrayBuffer()))
  })

  it("experimental_generateVideo without poll options submits and waits in one call", async () => {
    const { genjobs } = await setup()
    const result = await experimental_generateVideo({ model: genjobs.videoModel(VIDEO), prompt: "rain" })
    expect(result.videos).toHaveLength(1)
    expect(result.videos[0]!.uint8Array.byteLength).toBeGreaterThan(0)
  })

  it("a stored operation resumes with doStatus from another process's provider, without a second job", async () => {
    const { apiKey, client, genjobs } = await setup()
    const started = await genjobs.videoModel(VIDEO).doStart!({
      prompt: "a resumed wave", n: 1, aspectRatio: undefined, resolution: undefined, duration: undefined, fps: undefined,
      seed: undefined, image: undefined, frameImages: undefined, inputReferences: undefined, generateAudio: undefined,
      providerOptions: {}, headers: { "idempotency-key": "workflow-step-1" }
    })
    const stored = JSON.parse(JSON.stringify(started.operation))
    // After a crash: a new provider, the operation read back from wherever the workflow kept it.
    const resumed = createGenjobs({ baseUrl: target.baseUrl, apiKey, fetch: target.fetch })
    let status = await resumed.videoModel(VIDEO).doStatus!({ operation: stored })
    // Polled with a pause, as the AI SDK polls: this engine answers in-process, and a loop that
    // never leaves the microtask queue starves its workers (Effect 4 runs scheduled fibers on
    // setImmediate; Effect 3 ran them on microtasks) and the job stays pending forever.
    while (status.status === "pending") {
      await new Promise((resolve) => setTimeout(resolve, 20))
      status = await resumed.videoModel(VIDEO).doStatus!({ operation: stored })
    }
    expect(status.status).toBe("completed")
    expect((await client.list()).jobs).toHaveLength(1)
  })

  it("the AI SDK's retry after a lost answer reuses the Idempotency-Key: one job, one charge", async () => {
    const { client, genjobs, seen } = await setup({ drop: 1 })
    const before = (await client.account()).account.balanceMicroCents
    const result = await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "lost answer", maxRetries: 2 })
    expect(result.images).toHaveLength(1)
    expect(seen.submits).toBe(2)
    expect(seen.keys.size).toBe(1)
    const jobs = (await client.list()).jobs
    expect(jobs).toHaveLength(1)
    const price = (await client.estimate(IMAGE, { prompt: "lost answer" })).estimatedCostMicroCents
    expect((await client.account()).account.balanceMicroCents).toBe(before - price)
  })

  it("the video start's retry after a lost answer reuses the key too", async () => {
    const { client, genjobs, seen } = await setup({ drop: 1 })
    await experimental_generateVideo({ model: genjobs.videoModel(VIDEO), prompt: "lost start", poll: { intervalMs: 50 } })
    expect([seen.submits, seen.keys.size]).toEqual([2, 1])
    expect((await client.list()).jobs).toHaveLength(1)
  })

  it("a retry of an image-to-image call sends the upload's URL again: the same body, one job", async () => {
    const { client, genjobs, seen } = await setup({ drop: 1 })
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    // The demo provider here cannot read the upload back (no HTTP server): the job's own outcome is not the point.
    const outcome = await generateImage({ model: genjobs.imageModel("demo/image-gen/image-to-image"), prompt: { text: "edit", images: [png] } })
      .catch((e: unknown) => e)
    expect((outcome as { data?: { code?: string } }).data?.code).not.toBe("IDEMPOTENCY_KEY_REUSED")
    expect([seen.submits, seen.keys.size]).toEqual([2, 1])
    expect((await client.list()).jobs).toHaveLength(1)
  })

  it("two separate calls with the same prompt are two jobs", async () => {
    const { client, genjobs, seen } = await setup()
    await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "twice" })
    await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "twice" })
    expect(seen.keys.size).toBe(2)
    expect((await client.list()).jobs).toHaveLength(2)
  })

  it("generateSpeech returns the audio job's bytes", async () => {
    const { genjobs } = await setup()
    const result = await generateSpeech({ model: genjobs.speechModel(AUDIO), text: "hello", providerOptions: { genjobs: { input: { duration: 1 } } } })
    expect(new TextDecoder().decode(result.audio.uint8Array.slice(0, 4))).toBe("RIFF")
  })

  it("a failed job is an APICallError with the engine's code, not retried", async () => {
    const { client, genjobs, seen } = await setup()
    const error = await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "fails", providerOptions: { genjobs: { input: { demoFail: true } } } })
      .catch((e: unknown) => e)
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ isRetryable: false, data: { code: "GENERATION_FAILED" } })
    expect(seen.submits).toBe(1)
    expect((await client.list()).jobs.map((job) => job.status)).toEqual(["failed"])
  })

  it("a failed video job surfaces from doStatus as an APICallError with the engine's code", async () => {
    const { genjobs } = await setup()
    const error = await experimental_generateVideo({
      model: genjobs.videoModel(VIDEO),
      prompt: "fails",
      poll: { intervalMs: 50 },
      providerOptions: { genjobs: { input: { demoFail: true } } }
    }).catch((e: unknown) => e)
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ data: { code: "GENERATION_FAILED" } })
  })

  it("a refused submit is an APICallError with the HTTP status and the engine's code", async () => {
    const { genjobs, seen } = await setup({ creditsMicroCents: 0 })
    const error = await generateImage({ model: genjobs.imageModel(IMAGE), prompt: "no credits" }).catch((e: unknown) => e)
    expect(APICallError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ statusCode: 402, isRetryable: false, data: { code: "INSUFFICIENT_BALANCE" } })
    expect(seen.submits).toBe(1)
  })
})
