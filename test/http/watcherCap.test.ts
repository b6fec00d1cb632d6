import { Effect, Metric } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readEvents } from "../../src/client/eventStream.js"
import { openWatchers } from "../../src/services/JobFollow.js"
import { type HttpEngine, BASE, makeHttpEngine } from "../support/httpEngine.js"
import { waitFor } from "../support/waitFor.js"

const TEXT = "demo/text-gen/text-to-text"

/** The process-wide gauge: compared before and after, as other engines in this process may hold watchers. */
const gauge = () => Effect.runSync(Metric.value(openWatchers)).value

describe("the cap on open watchers", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine({ maxWatchers: 2 })
  })
  afterAll(() => engine.dispose())

  const open = (key: string, jobId: string) =>
    engine.handler(new Request(`${BASE}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` } }))

  it("answers the watcher beyond it 503 with Retry-After in the error envelope, and takes one again once another left", async () => {
    const acc = await engine.account()
    const submit = async () => (await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })).body.jobId as string
    const [a, b] = [await submit(), await submit()]
    const before = gauge()

    const stream = await open(acc.key, a)
    expect(stream.status).toBe(200)
    const events = readEvents(stream.body!)[Symbol.asyncIterator]()
    expect((await events.next()).value?.id).toBe("1")
    const polled = acc.get(`/v1/jobs/${b}`, { prefer: "wait=30" })
    expect(await waitFor(() => gauge() === before + 2)).toBe(true)

    for (const refused of [await acc.get(`/v1/jobs/${a}/events`), await acc.get(`/v1/jobs/${b}`, { prefer: "wait=5" })]) {
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("5")
      expect(refused.body).toMatchObject({
        success: false,
        error: { code: "SERVICE_UNAVAILABLE", details: { reason: "too_many_watchers" } }
      })
    }
    // A read without a wait is no watcher: never refused by the cap.
    expect((await acc.get(`/v1/jobs/${b}`)).status).toBe(200)

    // The stream's client leaves: its place is free again.
    await events.return?.(undefined)
    expect(await waitFor(() => gauge() === before + 1)).toBe(true)
    const again = await open(acc.key, a)
    expect(again.status).toBe(200)
    await again.body!.cancel()

    expect((await acc.post(`/v1/jobs/${b}/cancel`)).status).toBe(200)
    expect((await polled).body.status).toBe("cancelled")
    await acc.post(`/v1/jobs/${a}/cancel`)
    expect(await waitFor(() => gauge() === before)).toBe(true)
  })
})
