import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"
const IMAGE = "demo/image-gen/text-to-image"

describe("job list pagination", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const submitMany = async (acc: Awaited<ReturnType<HttpEngine["account"]>>, n: number, model = TEXT) => {
    const ids: Array<string> = []
    for (let i = 0; i < n; i++) {
      const reply = await acc.post("/v1/jobs/submit", { model, input: { prompt: `p${i}` } })
      expect(reply.status).toBe(200)
      ids.push(reply.body.jobId)
    }
    return ids
  }

  const walk = async (acc: Awaited<ReturnType<HttpEngine["account"]>>, query: string, between?: () => Promise<void>) => {
    const seen: Array<any> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const reply: any = await acc.get(`/v1/jobs?${query}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
      expect(reply.status).toBe(200)
      seen.push(...reply.body.jobs)
      expect(reply.body.hasMore).toBe(reply.body.nextCursor !== null)
      cursor = reply.body.nextCursor
      pages++
      if (between !== undefined) await between()
    } while (cursor !== null)
    return { seen, pages }
  }

  it("defaults to 20 newest-first items with the list fields", async () => {
    const acc = await engine.account({ maxConcurrentJobs: 100 })
    const ids = await submitMany(acc, 23)
    const first = await acc.get("/v1/jobs")
    expect(first.body.jobs).toHaveLength(20)
    expect(first.body.hasMore).toBe(true)
    expect(first.body.jobs[0]).toEqual({
      jobId: ids[22],
      status: "pending",
      progress: 0,
      providerProgress: null,
      model: TEXT,
      createdAt: expect.any(String),
      completedAt: null,
      error: null
    })
  })

  it("neither misses nor repeats items when jobs are created between pages", async () => {
    const acc = await engine.account({ maxConcurrentJobs: 100 })
    const original = await submitMany(acc, 25)
    const { pages, seen } = await walk(acc, "limit=7", async () => {
      await submitMany(acc, 2)
    })
    const seenIds = seen.map((j) => j.jobId)
    expect(new Set(seenIds).size).toBe(seenIds.length)
    expect(seenIds).toEqual([...original].reverse())
    expect(pages).toBe(4)
  })

  it("filters by status and modelId, and pages filtered lists", async () => {
    const acc = await engine.account({ maxConcurrentJobs: 100 })
    const texts = await submitMany(acc, 5)
    const images = await submitMany(acc, 3, IMAGE)
    await acc.post(`/v1/jobs/${texts[1]}/cancel`)
    await acc.post(`/v1/jobs/${images[0]}/cancel`)
    const cancelled = await walk(acc, "status=cancelled&limit=1")
    expect(cancelled.seen.map((j) => j.jobId)).toEqual([images[0], texts[1]])
    const imageJobs = await walk(acc, `modelId=${encodeURIComponent(IMAGE)}&limit=2`)
    expect(imageJobs.seen.map((j) => j.jobId)).toEqual([...images].reverse())
    const both = await walk(acc, `modelId=${encodeURIComponent(TEXT)}&status=pending`)
    expect(both.seen.map((j) => j.jobId)).toEqual([texts[4], texts[3], texts[2], texts[0]])
  })

  it("shows only the caller's own jobs", async () => {
    const a = await engine.account()
    const b = await engine.account()
    await submitMany(a, 2)
    expect((await b.get("/v1/jobs")).body).toEqual({ jobs: [], nextCursor: null, hasMore: false })
  })
})
