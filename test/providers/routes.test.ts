/**
 * Routes with fallback against two Replicate simulators registered as two providers: a start
 * moves to the next route only when the first provably took nothing (connections refused, a
 * 429), never after a start that may have happened; the route used shows in the admin job view;
 * the charge is the version's whatever the route.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { replicateProvider } from "genjobs/providers/replicate"
import { startReplicateSimulator, type ReplicateSimulator } from "../simulators/replicate.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"
import { ADMIN_TOKEN, startEngine, type TestEngine } from "./engineHarness.js"

const MODEL = "replicate/image-gen/text-to-image"

/** The demo catalog with one model whose version runs on `replicate`, else on `replicate-b`. */
const catalog = () => {
  const doc = demoCatalog()
  const template = doc.models.find((m) => m.slug === "demo/image-gen/text-to-image")!
  for (const id of ["replicate", "replicate-b"]) doc.providers.push({ ...doc.providers[0], id, name: id })
  const routes = [{ provider: "replicate", model: "owner/image" }, { provider: "replicate-b", model: "owner/image-b" }]
  const model = structuredClone(template)
  doc.models.push({ ...model, slug: MODEL, providerId: "replicate", versions: model.versions.map((v: object) => ({ ...v, routes })) })
  // Only the model under test: the demo provider is not registered here, and the catalog check refuses its models.
  return { ...doc, models: doc.models.filter((m) => m.slug === MODEL) }
}

let first: ReplicateSimulator
let second: ReplicateSimulator
let engine: TestEngine

const submitAndRun = async () => {
  const jobId = await engine.submit(MODEL)
  await engine.runOne()
  return engine.adminJob(jobId)
}

beforeAll(async () => {
  first = await startReplicateSimulator({ durationMs: 50 })
  second = await startReplicateSimulator({ durationMs: 50 })
  const adapter = (sim: ReplicateSimulator) =>
    replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, pollIntervalMs: 25, requestTimeoutMs: 1_500 })
  // A public URL on a closed port: predictions carry the job's marker, so `recover` can find them.
  engine = await startEngine({ replicate: adapter(first), "replicate-b": adapter(second) }, catalog(), {
    publicUrl: "http://127.0.0.1:9",
    providerCircuit: { failures: 3, pauseMs: 2_000 }
  })
})
afterEach(() => {
  first.reset()
  second.reset()
})
afterAll(async () => {
  await engine?.dispose()
  await first?.close()
  await second?.close()
})

describe("routes with fallback", () => {
  it("a job on a version whose first route works runs there, and the admin job view shows the route", async () => {
    const job = await submitAndRun()
    expect(job).toMatchObject({ status: "completed", route: { index: 0, providerId: "replicate", credentialId: null } })
    expect([first.counters.starts, second.counters.starts]).toEqual([1, 0])
  })

  it("a route whose provider refuses connections falls back to the next, which completes the job at the same charge", async () => {
    const onFirst = await submitAndRun()
    await first.goDown()
    const job = await submitAndRun().finally(() => first.comeBack())
    expect(job).toMatchObject({ status: "completed", route: { index: 1, providerId: "replicate-b" } })
    expect(job.costMicroCents).toBe(onFirst.costMicroCents)
    expect(second.counters.starts).toBe(1)
    expect(second.predictions().at(-1)).toMatchObject({ model: "owner/image-b" })
  })

  it("a 429 on the first route's start falls back to the next", async () => {
    first.rateLimitNext(1, { on: "start" })
    const job = await submitAndRun()
    expect(job).toMatchObject({ status: "completed", route: { index: 1, providerId: "replicate-b" } })
    expect([first.counters.rateLimited, first.counters.starts, second.counters.starts]).toEqual([1, 0, 1])
  })

  it("a route that accepted the start but whose answer never came is never left for another: the job follows what it finds there", async () => {
    first.answerLateNext(1, 4_000, { on: "start" })
    const job = await submitAndRun()
    expect(job).toMatchObject({ status: "completed", route: { index: 0, providerId: "replicate" } })
    expect([first.counters.starts, second.counters.starts]).toEqual([1, 0])
  })

  it("a 422 (the provider refused the input) fails the job on its route without trying another", async () => {
    first.errorNext(1, 422, { on: "start", message: "bad input" })
    const job = await submitAndRun()
    expect(job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
    expect(second.counters.starts).toBe(0)
  })

  it("a provider's circuit opens after the configured failures (starts skip it), shows in GET /admin/providers/health, and closes after a probe", async () => {
    const healthOf = async (providerId: string) =>
      (await engine.call("GET", "/admin/providers/health", undefined, ADMIN_TOKEN)).body.providers.find((p: any) => p.providerId === providerId)
    // Three 500s in a row: each start falls back to the second route, the third opens the first's circuit.
    first.errorNext(3, 500, { on: "start" })
    for (let i = 0; i < 3; i++) expect(await submitAndRun()).toMatchObject({ status: "completed", route: { index: 1 } })
    expect(await healthOf("replicate")).toMatchObject({ credentialId: "default", state: "open", consecutiveFailures: 3, openedAt: expect.any(String) })
    expect(await healthOf("replicate-b")).toMatchObject({ state: "closed", consecutiveFailures: 0 })
    // Open: the next start does not ask the first provider at all.
    const asked = first.counters.requests
    expect(await submitAndRun()).toMatchObject({ status: "completed", route: { index: 1 } })
    expect(first.counters.requests).toBe(asked)
    // After the pause, one start is the probe; it succeeds, and the circuit closes.
    await waitFor(async () => (await submitAndRun()).route.index === 0, 10_000)
    expect(await healthOf("replicate")).toMatchObject({ state: "closed", consecutiveFailures: 0, openedAt: null })
  })
})
