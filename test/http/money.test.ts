import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
const COST = 10_000

describe("money invariants under parallel requests", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const ledgerOf = async (accountId: string) => {
    const account = (await engine.admin("GET", `/admin/accounts/${accountId}`)).body
    const entries = (await engine.admin("GET", `/admin/accounts/${accountId}/ledger`)).body.entries as Array<any>
    return { balance: account.balanceMicroCents as number, entries }
  }

  it("never overshoots the concurrency maximum or the balance, and the ledger always sums to the balance", async () => {
    const acc = await engine.account({ credits: 7 * COST, maxConcurrentJobs: 10 })
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: `p${i}` } }))
    )
    const accepted = replies.filter((r) => r.status === 200)
    expect(accepted).toHaveLength(7)
    expect(new Set(replies.filter((r) => r.status !== 200).map((r) => r.body.error.code))).toEqual(
      new Set(["INSUFFICIENT_BALANCE"])
    )
    const { balance, entries } = await ledgerOf(acc.accountId)
    expect(balance).toBe(0)
    expect(entries.reduce((sum, e) => sum + e.amountMicroCents, 0)).toBe(balance)
  })

  it("caps parallel submits at the plan's concurrent-job maximum", async () => {
    const acc = await engine.account({ credits: 100 * COST, maxConcurrentJobs: 4 })
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: `p${i}` } }))
    )
    expect(replies.filter((r) => r.status === 200)).toHaveLength(4)
    expect(replies.filter((r) => r.status === 429).every((r) => r.body.error.code === "CONCURRENT_JOBS_EXCEEDED")).toBe(true)
    const { balance } = await ledgerOf(acc.accountId)
    expect(balance).toBe(96 * COST)
  })

  it("refunds a job once when it is cancelled many times in parallel, and charges minus refunds equal the balance change", async () => {
    const start = 50 * COST
    const acc = await engine.account({ credits: start, maxConcurrentJobs: 50 })
    const submitted = await Promise.all(
      Array.from({ length: 10 }, (_, i) => acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: `p${i}` } }))
    )
    const ids = submitted.map((r) => r.body.jobId as string)
    const cancels = await Promise.all(ids.flatMap((id) => [1, 2, 3].map(() => acc.post(`/v1/jobs/${id}/cancel`))))
    const ok = cancels.filter((r) => r.status === 200)
    expect(ok).toHaveLength(10)
    expect(cancels.filter((r) => r.status === 409)).toHaveLength(20)
    const working = await Promise.all(
      Array.from({ length: 5 }, (_, i) => acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: `q${i}` } }))
    )
    expect(working.every((r) => r.status === 200)).toBe(true)
    while (await engine.work()) { /* run every queued job */ }
    const { balance, entries } = await ledgerOf(acc.accountId)
    const charges = entries.filter((e) => e.kind === "charge").reduce((s, e) => s - e.amountMicroCents, 0)
    const refunds = entries.filter((e) => e.kind === "refund").reduce((s, e) => s + e.amountMicroCents, 0)
    expect(charges).toBe(15 * COST)
    expect(refunds).toBe(10 * COST)
    expect(start - balance).toBe(charges - refunds)
    expect(entries.filter((e) => e.kind === "refund").map((e) => e.jobId).sort()).toEqual([...ids].sort())
  })
})
