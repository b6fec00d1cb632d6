/**
 * Routes with fallback against two Replicate simulators registered as two providers: a start
 * moves to the next route only when the first provably took nothing (connections refused, a
 * 429), never after a start that may have happened; the route used shows in the admin job view;
 * the charge is the version's whatever the route.
 */
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { replicateProvider } from "genjobs/providers/replicate"
import { layerLocalSignals } from "../../adapters/memory/LocalJobSignal.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { EngineServicesLive } from "../../src/engine.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { makeWebHandler, type WebHandler } from "../../src/http/webHandler.js"
import { layerProviders } from "../../src/ports/Provider.js"
import { EngineConfig } from "../../src/services/EngineConfig.js"
import { Worker } from "../../src/services/Worker.js"
import { startReplicateSimulator, type ReplicateSimulator } from "../simulators/replicate.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { ADMIN_TOKEN, BASE } from "../support/httpEngine.js"

const MODEL = "replicate/image-gen/text-to-image"

/** The demo catalog with one model whose version runs on `replicate`, else on `replicate-b`. */
const catalog = () => {
  const doc = demoCatalog()
  const template = doc.models.find((m) => m.slug === "demo/image-gen/text-to-image")!
  for (const id of ["replicate", "replicate-b"]) doc.providers.push({ ...doc.providers[0], id, name: id })
  const routes = [{ provider: "replicate", model: "owner/image" }, { provider: "replicate-b", model: "owner/image-b" }]
  const model = structuredClone(template)
  doc.models.push({ ...model, slug: MODEL, providerId: "replicate", versions: model.versions.map((v: object) => ({ ...v, routes })) })
  return doc
}

let first: ReplicateSimulator
let second: ReplicateSimulator
let runtime: ManagedRuntime.ManagedRuntime<any, never>
let web: WebHandler
let key: string

const call = async (method: string, path: string, body?: unknown, token = key) => {
  const response = await web.fetch(new Request(`${BASE}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  }))
  return { status: response.status, body: await response.json() as any }
}

const submitAndRun = async () => {
  const submitted = await call("POST", "/v1/jobs/submit", { model: MODEL, input: { prompt: "p" } })
  expect(submitted.status).toBe(200)
  await runtime.runPromise(Effect.flatMap(Worker, (worker) => worker.runOnce("w")))
  return (await call("GET", `/admin/jobs/${submitted.body.jobId}`, undefined, ADMIN_TOKEN)).body
}

beforeAll(async () => {
  first = await startReplicateSimulator({ durationMs: 50 })
  second = await startReplicateSimulator({ durationMs: 50 })
  const adapter = (sim: ReplicateSimulator) =>
    replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, pollIntervalMs: 25, requestTimeoutMs: 500 })
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(
      layerMemoryStores,
      layerLocalSignals,
      layerMemoryBlobStore(`${BASE}/files`),
      layerSignedUploadTarget({ publicUrl: BASE, secret: "test-upload-secret" }),
      // A public URL on a closed port: predictions carry the job's marker, so `recover` can find them.
      EngineConfig.layer({
        providerRetry: { baseMs: 10, capMs: 50, maxRetries: 3 },
        providerOutputAllowPrivate: true,
        publicUrl: "http://127.0.0.1:9"
      }),
      FetchHttpClient.layer,
      HttpConfig.layer({ adminToken: Redacted.make(ADMIN_TOKEN) }),
      layerProviders({ replicate: adapter(first), "replicate-b": adapter(second) })
    ))
  )
  runtime = ManagedRuntime.make(services)
  web = makeWebHandler(Layer.succeedContext(await runtime.runPromise(Effect.context<any>())))
  expect((await call("PUT", "/admin/catalog", catalog(), ADMIN_TOKEN)).status).toBe(200)
  const account = await call("POST", "/admin/accounts", { name: "routes", creditsMicroCents: 100_000_000 }, ADMIN_TOKEN)
  key = (await call("POST", `/admin/accounts/${account.body.id}/keys`, { name: "k", scopes: [], allowedIPs: [] }, ADMIN_TOKEN)).body.key
})
afterEach(() => {
  first.reset()
  second.reset()
})
afterAll(async () => {
  await web?.dispose()
  await runtime?.dispose()
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
    first.answerLateNext(1, 2_000, { on: "start" })
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
})
