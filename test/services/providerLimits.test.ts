import { afterEach, describe, expect, it } from "vitest"
import { type AsyncTestEngine, makeTestEngine, testCatalog, textOutput } from "genjobs/testing"

let engine: AsyncTestEngine | undefined
afterEach(() => engine?.dispose())

/** The test catalog with its one provider limited to one generation at a time. */
const oneAtATime = { ...testCatalog, providers: testCatalog.providers.map((p) => ({ ...p, limits: { maxInFlight: 1 } })) }

describe("a worker under a provider limit", () => {
  it("runs one job at a time with 4 idle fibers, and takes the next as soon as one ends here", async () => {
    // A poll interval far longer than the test: only the end of the running job can wake the claimer.
    engine = await makeTestEngine({ catalog: oneAtATime, workers: 4, settings: { pollIntervalMs: 60_000 } })
    const alice = await engine.account({ credits: 100 })
    const hangs = [engine.provider.hangNext(), engine.provider.hangNext(), engine.provider.hangNext()]
    const jobs: Array<string> = []
    for (let i = 0; i < 3; i++) jobs.push((await alice.submit("test/text", { prompt: `p${i}` })).jobId)

    expect((await hangs[0]!.reached).job.id).toBe(jobs[0])
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(engine.provider.calls).toHaveLength(1)
    expect((await alice.get(jobs[1]!)).status).toBe("pending")

    const cancelled = await alice.cancel(jobs[2]!)
    expect(cancelled.status).toBe("cancelled")
    hangs[0]!.release(textOutput("one"))
    expect((await hangs[1]!.reached).job.id).toBe(jobs[1])
    hangs[1]!.release(textOutput("two"))
    await expect.poll(() => alice.get(jobs[1]!).then((j) => j.status)).toBe("completed")
    expect(engine.provider.calls.map((c) => c.job.id)).toEqual([jobs[0], jobs[1]])
    expect(await alice.balance()).toBe(100 - 2 * 1)
  })
})
