import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

describe("version status rules", () => {
  let engine: HttpEngine
  const setStatuses = async (statuses: Record<string, string>, currentVersion = "v2") => {
    const catalog = demoCatalog()
    const image = catalog.models.find((m) => m.slug === IMAGE)!
    image.currentVersion = currentVersion
    for (const v of image.versions) v.status = statuses[v.versionId] ?? v.status
    const reply = await engine.admin("PUT", "/admin/catalog", catalog)
    expect(reply.status).toBe(200)
  }
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("answers MODEL_NOT_FOUND for disabled and deleted versions, named or by default", async () => {
    const acc = await engine.account()
    await setStatuses({ v1: "disabled", v2: "deleted" })
    expectError(await acc.post("/v1/jobs/submit", { model: IMAGE, version: "v1", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/submit", { model: IMAGE, version: "v2", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/estimate", { model: IMAGE }), 404, "MODEL_NOT_FOUND")
  })

  it("falls back to the newest active version when the current one is not active", async () => {
    const acc = await engine.account()
    await setStatuses({ v1: "active", v2: "disabled" })
    const reply = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })
    expect(reply.body.costMicroCents).toBe(40_000)
  })

  it("fails and refunds a job whose version was disabled before a worker took it", async () => {
    await setStatuses({ v1: "deprecated", v2: "active" })
    const acc = await engine.account({ credits: 100_000 })
    const { body } = await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })
    await setStatuses({ v2: "disabled" })
    while (await engine.work()) { /* earlier tests' jobs run first */ }
    const job = await acc.get(`/v1/jobs/${body.jobId}`)
    expect(job.body).toMatchObject({ status: "failed", error: { code: "INTERNAL_ERROR" } })
    expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(100_000)
  })
})
