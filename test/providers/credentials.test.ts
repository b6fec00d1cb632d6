/**
 * Several credentials of one provider against the Replicate simulator: each job keeps the
 * credential it was started with (stored with its handle, by id) for every poll and download;
 * an id no longer configured is refused, never swapped.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { replicateProvider } from "genjobs/providers/replicate"
import { credentialIdOf, credentialSet } from "../../adapters/providers/credentials.js"
import { startReplicateSimulator, type ReplicateSimulator } from "../simulators/replicate.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"
import { startEngine, type TestEngine } from "./engineHarness.js"
import { failureOf, requestFor } from "./support.js"

const MODEL = "replicate/image-gen/text-to-image"

const catalog = () => {
  const doc = demoCatalog()
  const template = doc.models.find((m) => m.slug === "demo/image-gen/text-to-image")!
  doc.providers.push({ ...doc.providers[0], id: "replicate", name: "replicate" })
  const model = structuredClone(template)
  doc.models.push({
    ...model,
    slug: MODEL,
    providerId: "replicate",
    versions: model.versions.map((v: object) => ({ ...v, provider: { model: "owner/image" } }))
  })
  // Only the model under test: the demo provider is not registered here, and the catalog check refuses its models.
  return { ...doc, models: doc.models.filter((m) => m.slug === MODEL) }
}

let sim: ReplicateSimulator
let engine: TestEngine

beforeAll(async () => {
  sim = await startReplicateSimulator({ apiToken: "tok1", otherTokens: ["tok2"], filesNeedToken: true, durationMs: 1_000 })
  engine = await startEngine({ replicate: replicateProvider({ apiToken: "tok1,tok2", baseUrl: sim.url, pollIntervalMs: 25 }) }, catalog())
})
afterAll(async () => {
  await engine?.dispose()
  await sim?.close()
})

describe("several credentials per provider", () => {
  it("a job started with the second token is polled and downloaded with the second, while the simulator refuses the first", async () => {
    const firstJob = await engine.submit(MODEL)
    const firstRun = engine.runInBackground()
    await waitFor(() => sim.counters.starts === 1)
    // The first token now has a generation in flight: the next start takes the second (least in flight).
    sim.acceptOnly("tok2")
    const secondJob = await engine.submit(MODEL)
    await engine.runOne()
    await engine.join(firstRun)
    expect(await engine.adminJob(secondJob)).toMatchObject({
      status: "completed",
      route: { index: 0, providerId: "replicate", credentialId: credentialIdOf("tok2") }
    })
    expect(sim.counters.downloads).toBe(1)
    // The first job kept the first token, which the simulator no longer takes: no silent switch.
    expect(await engine.adminJob(firstJob)).toMatchObject({
      status: "failed",
      error: { message: expect.stringContaining("HTTP 401") },
      route: { credentialId: credentialIdOf("tok1") }
    })
    const stored = JSON.stringify(await engine.adminJob(secondJob))
    expect(stored).not.toContain("tok2")
  })

  it("a job whose credential is no longer configured fails its poll clearly", async () => {
    const provider = replicateProvider({ apiToken: ["tok1", "tok3"], baseUrl: sim.url })
    const request = { ...requestFor("owner/name", { prompt: "p" }), credentialId: credentialIdOf("tok2") }
    const error = await failureOf(provider.poll({ id: "p1" }, request))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    expect(error.message).toContain(`"${credentialIdOf("tok2")}" this job was started with is no longer configured`)
  })
})

describe("credentialSet", () => {
  it("takes one secret, comma-separated secrets or a list with ids and weights; ids never carry the secret", () => {
    expect(credentialSet("P", "only").credentials).toBeUndefined()
    const listed = credentialSet("P", " a , b ")
    expect(listed.credentials).toEqual([{ id: credentialIdOf("a"), weight: 1 }, { id: credentialIdOf("b"), weight: 1 }])
    expect(listed.credentials!.map((c) => c.id).join()).not.toMatch(/\ba\b|\bb\b/)
    expect(credentialSet("P", [{ id: "main", secret: "a", weight: 3 }, "b"]).credentials).toEqual([
      { id: "main", weight: 3 },
      { id: credentialIdOf("b"), weight: 1 }
    ])
    expect(Effect.runSync(listed.secretFor(undefined))).toBe("a")
    expect(Effect.runSync(listed.secretFor(credentialIdOf("b")))).toBe("b")
  })

  it("refuses no secret, a repeated secret or id, and a weight that is not positive", () => {
    expect(() => credentialSet("P", " , ")).toThrow(/no credential/)
    expect(() => credentialSet("P", "a,a")).toThrow(/same id/)
    expect(() => credentialSet("P", [{ id: "x", secret: "a" }, { id: "x", secret: "b" }])).toThrow(/same id/)
    expect(() => credentialSet("P", [{ secret: "a", weight: 0 }])).toThrow(/weight/)
  })
})
