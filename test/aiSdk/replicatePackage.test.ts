/**
 * A real AI SDK provider package, @ai-sdk/replicate, run by the engine through aiSdkProvider
 * against the local Replicate simulator (loopback only): an image through the package's
 * doGenerate, a video through its doStart/doStatus with the worker killed in between.
 */
import { createReplicate } from "@ai-sdk/replicate"
import { Effect, Fiber } from "effect"
import { aiSdkProvider, pooledFetch } from "genjobs/providers/ai-sdk"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { startEngine, type TestEngine } from "../providers/engineHarness.js"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"

const IMAGE = "aisdk/image-gen/text-to-image"
const VIDEO = "aisdk/video-gen/text-to-video"

const catalog = () => {
  const doc = demoCatalog()
  const as = (from: string, slug: string, providerModel: string) => {
    const model = structuredClone(doc.models.find((m) => m.slug === from)!)
    return { ...model, slug, providerId: "aisdk", versions: model.versions.map((v: object) => ({ ...v, provider: { model: providerModel } })) }
  }
  return {
    ...doc,
    providers: [...doc.providers, { ...doc.providers[0], id: "aisdk", name: "AI SDK" }],
    models: [as("demo/image-gen/text-to-image", IMAGE, "owner/image-model"), as("demo/video-gen/text-to-video", VIDEO, "owner/video-model")]
  }
}

/**
 * Replicate's video models answer one URL as `output`; the simulator answers a list, as its
 * image models do. This fetch unwraps it for the package's video schema, and changes nothing else.
 * It sends through `pooledFetch`, as an app should: the package reads undici's responses.
 */
const pooled = pooledFetch({ maxConnections: 2 })
const videoOutputAsString: typeof fetch = async (input, init) => {
  const response = await pooled(input, init)
  if (!response.headers.get("content-type")?.includes("application/json")) return response
  const body = await response.json() as Record<string, unknown>
  if (Array.isArray(body.output) && body.output.length === 1 && String(body.output[0]).endsWith(".mp4")) body.output = body.output[0]
  return new Response(JSON.stringify(body), { status: response.status, headers: response.headers })
}

let sim: ReplicateSimulator
let engine: TestEngine | undefined
beforeAll(async () => {
  sim = await startReplicateSimulator({ durationMs: 300 })
})
afterEach(async () => {
  await engine?.dispose()
  engine = undefined
})
afterAll(async () => {
  await sim?.close()
})

const startWith = async () => {
  const replicate = createReplicate({ apiToken: sim.apiToken, baseURL: `${sim.url}/v1`, fetch: videoOutputAsString })
  const provider = aiSdkProvider({ id: "aisdk", image: replicate.image, video: replicate.video, pollIntervalMs: 25 })
  engine = await startEngine({ aisdk: provider }, catalog(), { leaseMs: 300, providerPollIntervalMs: 25 })
  return engine
}

describe("aiSdkProvider with @ai-sdk/replicate against the Replicate simulator", () => {
  it("an image: the package creates the prediction, waits and downloads; the engine stores the bytes", async () => {
    const e = await startWith()
    const starts = sim.counters.starts
    const jobId = await e.submit(IMAGE, { prompt: "a replicated fox" })
    await e.runOne()
    const job = (await e.call("GET", `/v1/jobs/${jobId}`)).body
    expect(job).toMatchObject({ status: "completed", outputs: [{ type: "image" }] })
    expect(sim.counters.starts - starts).toBe(1)
  })

  it("a video: doStart's operation is kept; a worker killed while it polls is followed by one that resumes, one prediction", async () => {
    const e = await startWith()
    const starts = sim.counters.starts
    const jobId = await e.submit(VIDEO, { prompt: "a replicated wave" })
    const polls = sim.counters.polls
    const first = e.runInBackground()
    await waitFor(() => sim.counters.starts - starts === 1 && sim.counters.polls > polls)
    await Effect.runPromise(Fiber.interrupt(first))
    await waitFor(async () => {
      await e.runOne()
      return (await e.call("GET", `/v1/jobs/${jobId}`)).body.status === "completed"
    })
    const job = (await e.call("GET", `/v1/jobs/${jobId}`)).body
    expect(job).toMatchObject({ status: "completed", outputs: [{ type: "video", contentType: "video/mp4" }] })
    expect(sim.counters.starts - starts).toBe(1)
  })
})
