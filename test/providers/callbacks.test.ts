/**
 * The engine's callback endpoint, POST /v1/providers/{providerId}/callbacks/{jobId}, through the
 * web handler: verified by the job's provider over the raw body, then a hint to the job's worker.
 */
import { Effect, Exit, Layer, ManagedRuntime, Redacted, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { generateKeyPairSync } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { falProvider } from "genjobs/providers/fal"
import { replicateProvider } from "genjobs/providers/replicate"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { layerLocalSignals } from "../../adapters/memory/LocalJobSignal.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import type { JobId } from "../../src/domain/ids.js"
import { EngineServicesLive } from "../../src/engine.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { providerCallbackPath } from "../../src/http/providerCallbacks.js"
import { makeWebHandler, type WebHandler } from "../../src/http/webHandler.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { type GenerationProvider, layerProviders } from "../../src/ports/Provider.js"
import { EngineConfig } from "../../src/services/EngineConfig.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { ADMIN_TOKEN, BASE, makeHttpEngine } from "../support/httpEngine.js"
import { FAL_SIMULATOR_USER_ID, signFalWebhook } from "../simulators/fal.js"
import { signReplicateWebhook } from "../simulators/replicate.js"

const SECRET = `whsec_${Buffer.from("replicate callback secret").toString("base64")}`
const falKeys = generateKeyPairSync("ed25519")
const falPublicKey = falKeys.publicKey.export({ format: "jwk" }).x!

/** The demo catalog with a model at each of Replicate, fal.ai and `pinned`. */
const catalog = () => {
  const doc = demoCatalog()
  const template = doc.models.find((m) => m.slug === "demo/image-gen/text-to-image")!
  for (const id of ["replicate", "fal", "pinned"]) {
    doc.providers.push({ ...doc.providers[0], id, name: id })
    doc.models.push({ ...structuredClone(template), slug: `${id}/image-gen/text-to-image`, providerId: id })
  }
  return doc
}

/** The credential each callback to `pinned` was checked with, in order. */
const checkedWith: Array<string | undefined> = []
/** A provider whose signatures would be per credential: it records which one the engine named, and takes the callback. */
const pinned: GenerationProvider = {
  start: () => Effect.die("not started in these tests"),
  poll: () => Effect.die("not polled in these tests"),
  cancel: () => Effect.void,
  verifyCallback: (request) =>
    Effect.sync(() => {
      checkedWith.push(request.credentialId)
      return { handleId: "gen_1" }
    })
}

const services = EngineServicesLive.pipe(
  Layer.provideMerge(Layer.mergeAll(
    layerMemoryStores,
    layerLocalSignals,
    layerMemoryBlobStore(`${BASE}/files`),
    layerSignedUploadTarget({ publicUrl: BASE, secret: "test-upload-secret" }),
    EngineConfig.layer({}),
    FetchHttpClient.layer,
    HttpConfig.layer({ adminToken: Redacted.make(ADMIN_TOKEN) }),
    layerProviders({
      demo: makeDemoProvider(),
      replicate: replicateProvider({ apiToken: "r8_unused", baseUrl: "http://127.0.0.1:9", webhookSecret: SECRET }),
      fal: falProvider({ apiKey: "unused", baseUrl: "http://127.0.0.1:9", webhookPublicKeys: falPublicKey }),
      pinned,
      // A provider that takes no callbacks (no public keys configured).
      polled: falProvider({ apiKey: "unused", baseUrl: "http://127.0.0.1:9" })
    })
  ))
)

let runtime: ManagedRuntime.ManagedRuntime<Layer.Success<typeof services>, never>
let web: WebHandler
const jobs: Record<string, JobId> = {}

const call = async (method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}) => {
  const response = await web.fetch(new Request(`${BASE}${path}`, {
    method,
    headers: { "content-type": "application/json", ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body })
  }))
  return { status: response.status, body: await response.json() as any }
}

beforeAll(async () => {
  runtime = ManagedRuntime.make(services)
  const context = await runtime.runPromise(Effect.context<Layer.Success<typeof services>>())
  web = makeWebHandler(Layer.succeedContext(context))
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  expect((await call("PUT", "/admin/catalog", { body: JSON.stringify(catalog()), headers: admin })).status).toBe(200)
  const account = await call("POST", "/admin/accounts", { body: JSON.stringify({ name: "cb", creditsMicroCents: 10_000_000 }), headers: admin })
  const key = await call("POST", `/admin/accounts/${account.body.id}/keys`, { body: JSON.stringify({ name: "k", scopes: [], allowedIPs: [] }), headers: admin })
  for (const provider of ["replicate", "fal", "demo", "pinned"]) {
    const submitted = await call("POST", "/v1/jobs/submit", {
      body: JSON.stringify({ model: `${provider}/image-gen/text-to-image`, input: { prompt: "p" } }),
      headers: { authorization: `Bearer ${key.body.key}` }
    })
    expect(submitted.status).toBe(200)
    jobs[provider] = submitted.body.jobId
  }
})
afterAll(async () => {
  await web?.dispose()
  await runtime?.dispose()
})

const replicateCallback = (predictionId: string, options: { timestampSeconds?: number } = {}) => {
  const body = JSON.stringify({ id: predictionId, status: "succeeded", output: ["https://delivery.replicate.test/x.png"] })
  return { body, headers: signReplicateWebhook(body, SECRET, options) }
}

/** Runs `post` while listening for the job's hints; answers how many arrived by a moment after it. */
const hintsDuring = async (jobId: JobId, post: () => Promise<unknown>) => {
  let hints = 0
  const scope = await runtime.runPromise(Scope.make())
  await runtime.runPromise(JobEvents.use((events) => events.subscribe(jobId, () => hints++)).pipe(Scope.provide(scope)))
  await post()
  await new Promise((resolve) => setTimeout(resolve, 50))
  await runtime.runPromise(Scope.close(scope, Exit.void))
  return hints
}

describe("provider callbacks", () => {
  it("takes a signed Replicate webhook for a Replicate job, answers 200 and hints the job's worker", async () => {
    const { body, headers } = replicateCallback("pred123")
    let answer: Awaited<ReturnType<typeof call>> | undefined
    const hints = await hintsDuring(jobs["replicate"]!, async () => {
      answer = await call("POST", providerCallbackPath("replicate", jobs["replicate"]!), { body, headers })
    })
    expect(answer).toMatchObject({ status: 200, body: { success: true } })
    expect(hints).toBe(1)
  })

  it("takes a signed fal.ai webhook for a fal.ai job", async () => {
    const body = JSON.stringify({ request_id: "req-1", status: "OK", payload: {} })
    const headers = signFalWebhook(body, falKeys.privateKey, "req-1", { userId: FAL_SIMULATOR_USER_ID })
    expect((await call("POST", providerCallbackPath("fal", jobs["fal"]!), { body, headers })).status).toBe(200)
  })

  it("takes a signed webhook whose body names a key twice: the provider owns its bodies", async () => {
    // The API refuses such a body (docs/decisions.md, "Duplicate JSON keys are refused"); a
    // callback's body is the provider's, verified over its bytes, and the poll decides the job.
    const body = `{"id":"pred123","status":"processing","status":"succeeded","output":["https://delivery.replicate.test/x.png"]}`
    const answer = await call("POST", providerCallbackPath("replicate", jobs["replicate"]!), { body, headers: signReplicateWebhook(body, SECRET) })
    expect(answer).toMatchObject({ status: 200, body: { success: true } })
  })

  it("refuses a tampered body or a stale signature with 401 and no hint", async () => {
    const { body, headers } = replicateCallback("pred123")
    let answer: Awaited<ReturnType<typeof call>> | undefined
    const hints = await hintsDuring(jobs["replicate"]!, async () => {
      answer = await call("POST", providerCallbackPath("replicate", jobs["replicate"]!), { body: body.replace("123", "124"), headers })
    })
    expect(answer).toMatchObject({ status: 401, body: { success: false, error: { code: "UNAUTHORIZED" } } })
    expect(hints).toBe(0)
    const stale = replicateCallback("pred123", { timestampSeconds: Math.floor(Date.now() / 1000) - 600 })
    const refused = await call("POST", providerCallbackPath("replicate", jobs["replicate"]!), stale)
    expect(refused).toMatchObject({ status: 401, body: { error: { code: "UNAUTHORIZED" } } })
    expect(refused.body.error.message).toContain("5 minutes")
  })

  it("answers 404 for an unknown provider or one that takes no callbacks, before reading anything else", async () => {
    const { body, headers } = replicateCallback("pred123")
    expect(await call("POST", providerCallbackPath("nobody", jobs["replicate"]!), { body, headers })).toMatchObject({
      status: 404,
      body: { success: false, error: { code: "NOT_FOUND" } }
    })
    expect((await call("POST", providerCallbackPath("polled", jobs["replicate"]!), { body, headers })).status).toBe(404)
  })

  it("answers 404 for an unknown job or a job of another provider, once the callback is verified", async () => {
    const { body, headers } = replicateCallback("pred123")
    for (const jobId of ["job_unknown", jobs["demo"]!, jobs["fal"]!]) {
      expect(await call("POST", providerCallbackPath("replicate", jobId), { body, headers })).toMatchObject({
        status: 404,
        body: { error: { code: "JOB_NOT_FOUND" } }
      })
    }
    // Unsigned, the same requests say nothing about which jobs exist.
    expect((await call("POST", providerCallbackPath("replicate", "job_unknown"), { body })).status).toBe(401)
  })

  it("refuses a body over the JSON cap with 413, reading no further", async () => {
    const { headers } = replicateCallback("pred123")
    const body = JSON.stringify({ id: "pred123", logs: "x".repeat(2 * 1024 * 1024) })
    expect(await call("POST", providerCallbackPath("replicate", jobs["replicate"]!), { body, headers })).toMatchObject({
      status: 413,
      body: { error: { code: "PAYLOAD_TOO_LARGE" } }
    })
  })

  it("checks a callback with the credential the job's start recorded, each one's before it is recorded", async () => {
    const jobId = jobs["pinned"]!
    const post = () => call("POST", providerCallbackPath("pinned", jobId), { body: JSON.stringify({ id: "gen_1" }) })
    expect((await post()).status).toBe(200)
    // The start's state, as a worker commits it once the provider took the start with the second key.
    await runtime.runPromise(Effect.gen(function*() {
      const repo = yield* JobRepo
      const now = Date.now()
      const claimed = yield* repo.claimIds([jobId], { workerId: "wrk_cb", now, leaseMs: 60_000, maxAttempts: 3 })
      expect(claimed.map((job) => job.id)).toEqual([jobId])
      const route = { index: 0, providerId: "pinned", credentialId: "key_second" }
      expect(yield* repo.saveProviderState(jobId, "wrk_cb", { phase: "started", handle: { id: "gen_1" }, starts: 1, route })).toBe(true)
    }))
    expect((await post()).status).toBe(200)
    expect(checkedWith).toEqual([undefined, "key_second"])
  })

  it("is not an operation of the public OpenAPI document", async () => {
    const document = await call("GET", "/v1/openapi.json")
    expect(Object.keys(document.body.paths).filter((path) => path.includes("callbacks"))).toEqual([])
  })
})

describe("provider callbacks without providers", () => {
  it("answers 404 in an engine composed without any provider", async () => {
    const engine = await makeHttpEngine()
    try {
      const { body, headers } = replicateCallback("pred123")
      const answer = await engine.request("POST", providerCallbackPath("replicate", "job_x"), { rawBody: body, headers })
      expect(answer).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND" } } })
    } finally {
      await engine.dispose()
    }
  })
})
