import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { type HttpEngine, makeHttpEngine, type Outage } from "../support/httpEngine.js"
import { waitFor } from "../support/waitFor.js"

const IMAGE = "demo/image-gen/text-to-image"
const SUBMIT = { model: IMAGE, input: { prompt: "x" } }

const expectRetryLater = (reply: { status: number; headers: Headers; body: any }, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code, retryAfter: reply.headers.get("retry-after") })
    .toEqual({ status: 503, code, retryAfter: "5" })
  expect(JSON.stringify(reply.body)).not.toContain("database unreachable")
}

/** While `outage` is on, runs `f`; the database is back afterwards. */
const during = async <A>(outage: Outage, f: () => Promise<A>): Promise<A> => {
  outage.down = true
  try {
    return await f()
  } finally {
    outage.down = false
  }
}

describe("the whole database unreachable", () => {
  const outage: Outage = { down: false }
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine({}, { outage })
  })
  afterAll(() => engine.dispose())

  it("submit answers 503 PUBSUB_PUBLISH_FAILED with Retry-After (the key lookup fails first) and charges nothing", async () => {
    const acc = await engine.account({ credits: 100_000 })
    expectRetryLater(await during(outage, () => acc.post("/v1/jobs/submit", SUBMIT)), "PUBSUB_PUBLISH_FAILED")
    expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(100_000)
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])
  })

  it("every other endpoint answers 503 SERVICE_UNAVAILABLE with Retry-After, not 500", async () => {
    const acc = await engine.account()
    const { body } = await acc.post("/v1/jobs/submit", SUBMIT)
    await during(outage, async () => {
      expectRetryLater(await acc.get(`/v1/jobs/${body.jobId}`), "SERVICE_UNAVAILABLE")
      expectRetryLater(await acc.get("/v1/jobs"), "SERVICE_UNAVAILABLE")
      expectRetryLater(await acc.post(`/v1/jobs/${body.jobId}/cancel`), "SERVICE_UNAVAILABLE")
      expectRetryLater(await acc.post("/v1/jobs/estimate", SUBMIT), "SERVICE_UNAVAILABLE")
      expectRetryLater(await engine.admin("GET", `/admin/accounts/${acc.accountId}`), "SERVICE_UNAVAILABLE")
      expectRetryLater(await engine.admin("POST", "/admin/accounts", { name: "n" }), "SERVICE_UNAVAILABLE")
    })
    expect((await acc.get(`/v1/jobs/${body.jobId}`)).body.status).toBe("pending")
  })
})

describe("one store failing on the submit path", () => {
  it("a failed commit answers PUBSUB_PUBLISH_FAILED and charges nothing", async () => {
    const outage: Outage = { down: false, only: [JobRepo] }
    const engine = await makeHttpEngine({}, { outage })
    try {
      const acc = await engine.account({ credits: 100_000 })
      expectRetryLater(await during(outage, () => acc.post("/v1/jobs/submit", SUBMIT)), "PUBSUB_PUBLISH_FAILED")
      expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(100_000)
    } finally {
      await engine.dispose()
    }
  })

  it("a failed catalog read answers PUBSUB_PUBLISH_FAILED", async () => {
    const outage: Outage = { down: false, only: [CatalogRepo] }
    const engine = await makeHttpEngine({}, { outage })
    try {
      const acc = await engine.account({ credits: 100_000 })
      // The catalog is cached for 2 seconds; once an estimate (which charges nothing) reads it
      // again and fails, so does a submit.
      const estimateFails = () =>
        during(outage, async () => (await acc.post("/v1/jobs/estimate", SUBMIT)).status === 503)
      expect(await waitFor(estimateFails, 5_000)).toBe(true)
      expectRetryLater(await during(outage, () => acc.post("/v1/jobs/submit", SUBMIT)), "PUBSUB_PUBLISH_FAILED")
      expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(100_000)
    } finally {
      await engine.dispose()
    }
  })
})
