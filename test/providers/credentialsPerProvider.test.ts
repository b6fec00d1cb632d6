/**
 * Several credentials for fal.ai, Runway and OpenAI against their simulators, as for Replicate
 * (credentials.test.ts): a job keeps the key it was started with (stored by id with its handle)
 * for every poll and result, and a key the simulator no longer takes fails only the jobs started
 * with it. Their output files need no key (fal.ai's CDN, Runway's and OpenAI's signed URLs), so
 * a download proves the job's outputs were reached, not which key fetched them.
 */
import { ConfigProvider, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { falProvider, falProviderFromConfig } from "genjobs/providers/fal"
import { openaiProvider, openaiProviderFromConfig } from "genjobs/providers/openai"
import { runwayProvider, runwayProviderFromConfig } from "genjobs/providers/runway"
import { credentialIdOf } from "../../adapters/providers/credentials.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import type { SimulatorControls } from "../simulators/core.js"
import { type FalSimulator, startFalSimulator } from "../simulators/fal.js"
import { type OpenAISimulator, startOpenAISimulator } from "../simulators/openai.js"
import { type RunwaySimulator, startRunwaySimulator } from "../simulators/runway.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"
import { startEngine, type TestEngine } from "./engineHarness.js"
import { requestFor } from "./support.js"

/** A catalog holding one image model served by `providerId` with the version's `provider` mapping. */
const catalogFor = (slug: string, providerId: string, mapping: Record<string, unknown>) => {
  const doc = demoCatalog()
  const template = structuredClone(doc.models.find((m) => m.slug === "demo/image-gen/text-to-image")!)
  doc.providers.push({ ...doc.providers[0], id: providerId, name: providerId })
  const model = { ...template, slug, providerId, versions: template.versions.map((v: object) => ({ ...v, provider: mapping })) }
  // Only the model under test: the demo provider is not registered here, and the catalog check refuses its models.
  return { ...doc, models: [model] }
}

interface TwoKeySimulator extends SimulatorControls {
  readonly acceptOnly: (...keys: ReadonlyArray<string>) => void
}

/**
 * The Replicate test's steps for a polled provider: the first job holds the first key (least in
 * flight sends the next start to the second), the simulator then takes only the second.
 */
const secondKeyKeepsItsJob = (
  name: string,
  providerId: string,
  slug: string,
  setUp: () => Promise<{ readonly sim: TwoKeySimulator; readonly provider: GenerationProvider; readonly catalog: unknown }>
) =>
  describe(`${name} with two keys`, () => {
    let sim: TwoKeySimulator
    let engine: TestEngine
    beforeAll(async () => {
      const made = await setUp()
      sim = made.sim
      engine = await startEngine({ [providerId]: made.provider }, made.catalog)
    })
    afterAll(async () => {
      await engine?.dispose()
      await sim?.close()
    })

    it("a job started with the second key is polled and downloaded with the second, while the simulator refuses the first", async () => {
      const firstJob = await engine.submit(slug)
      const firstRun = engine.runInBackground()
      await waitFor(() => sim.counters.starts === 1)
      sim.acceptOnly("key2")
      const secondJob = await engine.submit(slug)
      await engine.runOne()
      await engine.join(firstRun)
      const second = await engine.adminJob(secondJob)
      expect(second).toMatchObject({ status: "completed", route: { index: 0, credentialId: credentialIdOf("key2") } })
      expect(sim.counters.downloads).toBe(1)
      // The first job kept the first key, which the simulator no longer takes: no silent switch.
      expect(await engine.adminJob(firstJob)).toMatchObject({
        status: "failed",
        error: { message: expect.stringContaining("HTTP 401") },
        route: { credentialId: credentialIdOf("key1") }
      })
      expect(JSON.stringify(second)).not.toContain("key2")
    })
  })

secondKeyKeepsItsJob("fal.ai", "fal", "fal/flux/dev", async () => {
  const sim: FalSimulator = await startFalSimulator({ apiKey: "key1", otherKeys: ["key2"], durationMs: 1_000 })
  return {
    sim,
    provider: falProvider({ apiKey: "key1,key2", baseUrl: sim.url, pollIntervalMs: 25 }),
    catalog: catalogFor("fal/flux/dev", "fal", { model: "fal-ai/flux/dev" })
  }
})

secondKeyKeepsItsJob("Runway", "runway", "runway/gen4-image/text-to-image", async () => {
  const sim: RunwaySimulator = await startRunwaySimulator({ apiSecret: "key1", otherSecrets: ["key2"], durationMs: 1_000 })
  return {
    sim,
    provider: runwayProvider({ apiSecret: "key1,key2", baseUrl: sim.url, pollIntervalMs: 25 }),
    catalog: catalogFor("runway/gen4-image/text-to-image", "runway", {
      model: "text_to_image/gen4_image",
      input: { promptText: "$.prompt", ratio: "1920:1080" }
    })
  }
})

describe("OpenAI with two keys", () => {
  const SLUG = "openai/dall-e-3/text-to-image"
  let sim: OpenAISimulator
  let engine: TestEngine
  beforeAll(async () => {
    sim = await startOpenAISimulator({ apiKey: "key1", otherKeys: ["key2"] })
    // The second key carries twice the weight: with nothing in flight, the pick is the second.
    const provider = openaiProvider({ apiKey: [{ secret: "key1" }, { secret: "key2", weight: 2 }], baseUrl: sim.url })
    engine = await startEngine({ openai: provider }, catalogFor(SLUG, "openai", { model: "dall-e-3" }))
  })
  afterAll(async () => {
    await engine?.dispose()
    await sim?.close()
  })

  it("a job is generated with the key the pick chose, while the simulator refuses the other, and shows that route", async () => {
    sim.acceptOnly("key2")
    const job = await engine.submit(SLUG)
    await engine.runOne()
    const stored = await engine.adminJob(job)
    // Completed while the simulator refuses the first key: the picture was made with the second.
    // The start finished in its call and left no handle: the route was recorded with the job's end.
    expect(stored).toMatchObject({
      status: "completed",
      route: { index: 0, providerId: "openai", credentialId: credentialIdOf("key2") }
    })
    expect(sim.counters.starts).toBe(1)
    expect(sim.counters.downloads).toBe(1)
    expect(JSON.stringify(stored)).not.toContain("key2")
  })

  it("a start the provider refused in its call fails the job, which shows the route and key it was sent with", async () => {
    sim.acceptOnly("key1")
    const job = await engine.submit(SLUG)
    await engine.runOne()
    expect(await engine.adminJob(job)).toMatchObject({
      status: "failed",
      error: { code: "GENERATION_FAILED", message: expect.stringContaining("HTTP 401") },
      route: { index: 0, providerId: "openai", credentialId: credentialIdOf("key2") }
    })
  })
})

describe("fal.ai, OpenAI and Runway keys from the environment and for cancels", () => {
  it("FAL_KEY, OPENAI_API_KEY and RUNWAYML_API_SECRET list several keys, comma-separated", async () => {
    const env = ConfigProvider.fromEnv({ env: { FAL_KEY: "key1,key2", OPENAI_API_KEY: "key1, key2", RUNWAYML_API_SECRET: "key1,key2" } })
    const ids = [{ id: credentialIdOf("key1"), weight: 1 }, { id: credentialIdOf("key2"), weight: 1 }]
    for (const fromConfig of [falProviderFromConfig, openaiProviderFromConfig, runwayProviderFromConfig]) {
      const provider = await Effect.runPromise(Effect.provideService(fromConfig, ConfigProvider.ConfigProvider, env))
      expect(Option.getOrThrow(provider).credentials).toEqual(ids)
    }
  })

  it("a fal.ai request and a Runway task started with the second key are cancelled with it", async () => {
    const fal = await startFalSimulator({ apiKey: "key1", otherKeys: ["key2"], durationMs: 30_000 })
    const runway = await startRunwaySimulator({ apiSecret: "key1", otherSecrets: ["key2"], durationMs: 30_000 })
    try {
      const cases = [
        { sim: fal, provider: falProvider({ apiKey: "key1,key2", baseUrl: fal.url }), request: requestFor("fal-ai/flux/dev", { prompt: "p" }) },
        {
          sim: runway,
          provider: runwayProvider({ apiSecret: "key1,key2", baseUrl: runway.url }),
          request: requestFor("text_to_image/gen4_image", { promptText: "p", ratio: "1920:1080" })
        }
      ]
      for (const { provider, request: base, sim } of cases) {
        const request = { ...base, credentialId: credentialIdOf("key2") }
        const started = await Effect.runPromise(provider.start(request))
        if (started._tag !== "Started") throw new Error(`expected Started, got ${started._tag}`)
        sim.acceptOnly("key2")
        await Effect.runPromise(provider.cancel(started.handle, request))
        expect(sim.counters.cancels).toBe(1)
      }
    } finally {
      await fal.close()
      await runway.close()
    }
  })
})
