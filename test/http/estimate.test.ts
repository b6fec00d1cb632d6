import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const AUDIO = "demo/audio-gen/text-to-audio"
const DISCOUNT = [{ type: "partner", percentage: 25 }]

const answer = (reply: { status: number; body: any }) => ({ status: reply.status, body: reply.body.error ?? reply.body })

/** Every amount of an estimate is a whole number of micro-cents. */
const expectExact = (estimate: any) => {
  const amounts = [estimate.baseCostMicroCents, estimate.estimatedCostMicroCents, ...estimate.breakdown.map((c: any) => c.costMicroCents)]
  for (const amount of amounts) expect(Number.isSafeInteger(amount)).toBe(true)
}

describe("estimate checks its input as submit does", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("answers the same INVALID_INPUT as submit for input the model's schema refuses", async () => {
    const acc = await engine.account({ discounts: DISCOUNT })
    for (const input of [{ prompt: "x", duration: 1e308 }, { prompt: "x", duration: "long" }, { duration: 3 }, { prompt: "x", extra: 1 }]) {
      const estimate = answer(await acc.post("/v1/jobs/estimate", { model: AUDIO, input }))
      const submit = answer(await acc.post("/v1/jobs/submit", { model: AUDIO, input }))
      expect(estimate).toEqual(submit)
      expect(estimate.status).toBe(400)
      expect(estimate.body.code).toBe("INVALID_INPUT")
    }
  })

  it("prices a discounted account's valid input in whole micro-cents, as submit charges", async () => {
    const acc = await engine.account({ discounts: DISCOUNT })
    const input = { prompt: "x", duration: 2.5 }
    const estimate = await acc.post("/v1/jobs/estimate", { model: AUDIO, input })
    expect(estimate.status).toBe(200)
    expect(estimate.body).toMatchObject({ baseCostMicroCents: 120_000, estimatedCostMicroCents: 90_000, hasDiscount: true })
    expectExact(estimate.body)
    expect((await acc.post("/v1/jobs/submit", { model: AUDIO, input })).body.costMicroCents).toBe(90_000)
  })

  it("prices an estimate without input from the defaults (the spec makes input optional there)", async () => {
    const acc = await engine.account()
    const estimate = await acc.post("/v1/jobs/estimate", { model: AUDIO })
    expect(estimate.body.estimatedCostMicroCents).toBe(100_000)
  })
})

describe("prices beyond what an account can hold", () => {
  it("are INVALID_INPUT on estimate and submit, never null, 4e+304 or 500", async () => {
    const engine = await makeHttpEngine()
    try {
      // A catalog whose schema lets any duration through: the price itself must be refused.
      const catalog = demoCatalog()
      delete catalog.models.find((m) => m.slug === AUDIO)!.versions[0].inputSchema.properties.duration.maximum
      expect((await engine.admin("PUT", "/admin/catalog", catalog)).status).toBe(200)
      for (const discounts of [[], DISCOUNT]) {
        const acc = await engine.account({ discounts, credits: 1_000_000 })
        for (const duration of [1e300, 1e12]) {
          const input = { prompt: "x", duration }
          const estimate = await acc.post("/v1/jobs/estimate", { model: AUDIO, input })
          expect({ status: estimate.status, code: estimate.body.error?.code }).toEqual({ status: 400, code: "INVALID_INPUT" })
          const submit = await acc.post("/v1/jobs/submit", { model: AUDIO, input })
          expect({ status: submit.status, code: submit.body.error?.code }).toEqual({ status: 400, code: "INVALID_INPUT" })
        }
        expect((await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents).toBe(1_000_000)
      }
    } finally {
      await engine.dispose()
    }
  })
})
