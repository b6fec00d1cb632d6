import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { composeEngine, DEMO_PROVIDER_ID, type Engine, localFiles, makeDemoProvider, makeEngine, startEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { sqliteStore } from "genjobs/sqlite"
import { afterEach, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"

const ADMIN = "admin-secret"
const ORIGIN = "http://host.test"
const BASE_PATH = "/api/genjobs"
const providers = { [DEMO_PROVIDER_ID]: makeDemoProvider() }

const started: Array<Engine> = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.dispose()))
})

const keep = (engine: Engine) => {
  started.push(engine)
  return engine
}

/** Calls the engine as a mount would: the full URL, and what the host knows of the socket. */
const caller = (engine: Engine, info: { readonly remoteAddress?: string } = {}) =>
  async (method: string, path: string, auth: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await engine.fetch(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { authorization: `Bearer ${auth}`, "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }),
      info
    )
    return { status: response.status, body: await response.json() as any }
  }

const setUp = async (engine: Engine, key: { readonly allowedIPs?: ReadonlyArray<string> } = {}) => {
  const call = caller(engine)
  expect((await call("PUT", `${BASE_PATH}/admin/catalog`, ADMIN, demoCatalog())).status).toBe(200)
  const account = (await call("POST", `${BASE_PATH}/admin/accounts`, ADMIN, { name: "a", creditsMicroCents: 10_000_000 })).body
  const created = (await call("POST", `${BASE_PATH}/admin/accounts/${account.id}/keys`, ADMIN, { name: "k", ...key })).body
  return created.key as string
}

describe("the engine mounted under a base path", () => {
  const memoryEngine = () =>
    makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: `${ORIGIN}${BASE_PATH}` }),
      providers,
      http: { adminToken: ADMIN },
      basePath: BASE_PATH
    }).then(keep)

  it("answers under the base path only; outside it, the engine's 404 envelope", async () => {
    const engine = await memoryEngine()
    const under = await engine.fetch(new Request(`${ORIGIN}${BASE_PATH}/health`))
    expect([under.status, await under.json()]).toEqual([200, { status: "ok" }])
    const outside = await engine.fetch(new Request(`${ORIGIN}/health`))
    expect(outside.status).toBe(404)
    expect((await outside.json() as any).error.code).toBe("NOT_FOUND")
    const perRequest = await engine.fetch(new Request(`${ORIGIN}/other/health`), { basePath: "/other/" })
    expect(perRequest.status).toBe(200)
  })

  it("runs a job, stores its output under the base path's file URL", async () => {
    const engine = await memoryEngine()
    const key = await setUp(engine)
    const call = caller(engine)
    const submitted = await call("POST", `${BASE_PATH}/v1/jobs/submit`, key, { model: "demo/image-gen/text-to-image", input: { prompt: "p" } })
    expect(submitted.status).toBe(200)
    let job: any
    expect(await waitFor(async () => {
      job = (await call("GET", `${BASE_PATH}/v1/jobs/${submitted.body.jobId}`, key)).body
      return job.status === "completed"
    })).toBe(true)
    expect(job.output.startsWith(`${ORIGIN}${BASE_PATH}/files/`)).toBe(true)
    const file = await engine.fetch(new Request(job.output))
    expect([file.status, file.headers.get("content-type")]).toEqual([200, "image/png"])
  })

  it("checks IP allow-lists against the address the host passes, and X-Forwarded-For only with trusted hops", async () => {
    const engine = await memoryEngine()
    const key = await setUp(engine, { allowedIPs: ["10.1.2.3"] })
    const path = `${BASE_PATH}/v1/jobs`
    expect((await caller(engine, { remoteAddress: "10.1.2.3" })("GET", path, key)).status).toBe(200)
    const refused = await caller(engine, { remoteAddress: "10.9.9.9" })("GET", path, key)
    expect([refused.status, refused.body.error.code]).toEqual([403, "IP_NOT_WHITELISTED"])
    expect((await caller(engine)("GET", path, key)).status).toBe(403)
    const forwarded = { "x-forwarded-for": "10.1.2.3" }
    expect((await caller(engine, { remoteAddress: "127.0.0.1" })("GET", path, key, undefined, forwarded)).status).toBe(403)
    const viaProxy = await engine.fetch(
      new Request(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${key}`, ...forwarded } }),
      { remoteAddress: "127.0.0.1", trustedProxyHops: 1 }
    )
    expect(viaProxy.status).toBe(200)
  })
})

describe("one composition, split across processes", () => {
  it("an API-only engine queues; a worker-only engine over the same database runs the job; dispose hands its generation back for the next worker", async () => {
    const dir = mkdtempSync(join(tmpdir(), "genjobs-compose-"))
    const common = {
      store: sqliteStore({ filename: join(dir, "genjobs.db") }),
      files: localFiles({ dir: join(dir, "files"), publicUrl: `${ORIGIN}${BASE_PATH}`, uploadSecret: "s" }),
      providers,
      http: { adminToken: ADMIN },
      basePath: BASE_PATH
    }
    const api = keep(await makeEngine({ ...common, workers: 0, webhookDispatchers: 0, uploadSweeper: false }))
    const key = await setUp(api)
    const call = caller(api)
    const submitted = await call("POST", `${BASE_PATH}/v1/jobs/submit`, key, {
      model: "demo/text-gen/text-to-text",
      input: { prompt: "slow", demoDelayMs: 400 }
    })
    const status = async () => (await call("GET", `${BASE_PATH}/v1/jobs/${submitted.body.jobId}`, key)).body.status
    await new Promise((r) => setTimeout(r, 300))
    expect(await status()).toBe("pending")

    const worker = await makeEngine({ ...common, workers: 1, webhookDispatchers: 0 })
    expect(await waitFor(async () => (await status()) === "processing")).toBe(true)
    // Closing the worker mid-job does not wait for a generation already started at its provider:
    // the job stays processing with its handle, and the next worker resumes it at once.
    await worker.dispose()
    expect(await status()).toBe("processing")
    keep(await makeEngine({ ...common, workers: 1, webhookDispatchers: 0 }))
    expect(await waitFor(async () => (await status()) === "completed")).toBe(true)
  })

  it("refuses webhook dispatchers without a sender instead of leaving deliveries unsent", async () => {
    const layer = composeEngine({ store: memoryStore(), files: memoryFiles({ publicUrl: ORIGIN }), providers })
    await expect(startEngine(layer)).rejects.toThrow(/webhookSender/)
  })
})
