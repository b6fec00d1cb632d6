import { Context, Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { readEvents, type ServerEvent } from "../../src/client/eventStream.js"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"
import { waitFor } from "../support/waitFor.js"

const TEXT = "demo/text-gen/text-to-text"

type Queue = {
  position: number
  ahead: number
  estimatedStartAt: { p50: string; p90: string }
  estimatedCompletionAt: { p50: string; p90: string }
}

let engine: HttpEngine | undefined
afterEach(async () => {
  await engine?.dispose()
  engine = undefined
})

/** Submits `n` jobs of the account, in order; answers their ids. */
const submitMany = async (acc: Awaited<ReturnType<HttpEngine["account"]>>, n: number) => {
  const ids: Array<string> = []
  for (let i = 0; i < n; i++) {
    const submitted = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: `job ${i}` } })
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200)
    ids.push(submitted.body.jobId)
  }
  return ids
}

describe("a pending job's place in the queue", () => {
  it("is counted in the fair order: an account's first job does not wait behind another's backlog", async () => {
    engine = await makeHttpEngine()
    const a = await engine.account()
    const b = await engine.account()
    const aJobs = await submitMany(a, 5)
    const [bJob] = await submitMany(b, 1)

    const queueOf = async (acc: typeof a, jobId: string): Promise<Queue> => {
      const got = await acc.get(`/v1/jobs/${jobId}`)
      expect(got.status).toBe(200)
      expect(got.body.status).toBe("pending")
      return got.body.queue
    }
    // B's first job takes the smallest waiting key: only A's first job (of an equal key) can be ahead of it.
    const bPlace = await queueOf(b, bJob!)
    expect(bPlace.position).toBe(2)
    expect(bPlace.ahead).toBe(1)
    // A's own jobs go first in, first out; B's one job is ahead of all but A's first.
    expect((await queueOf(a, aJobs[0]!)).position).toBe(1)
    expect((await queueOf(a, aJobs[1]!)).position).toBe(3)
    expect((await queueOf(a, aJobs[4]!)).position).toBe(6)

    // Estimates are ISO times, p50 no later than p90, the end after the start.
    const at = (text: string) => {
      expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      return Date.parse(text)
    }
    expect(at(bPlace.estimatedStartAt.p50)).toBeLessThanOrEqual(at(bPlace.estimatedStartAt.p90))
    expect(at(bPlace.estimatedCompletionAt.p50)).toBeGreaterThan(at(bPlace.estimatedStartAt.p50))
    expect(at(bPlace.estimatedCompletionAt.p90)).toBeGreaterThanOrEqual(at(bPlace.estimatedCompletionAt.p50))
    // No run seen yet: the version's estimatedSeconds (2 s for the demo text model) is the run time.
    const runMs = (place: Queue) => Date.parse(place.estimatedCompletionAt.p50) - Date.parse(place.estimatedStartAt.p50)
    expect(runMs(bPlace)).toBe(2_000)

    // The operator's board: per account and version, the first and last job's places, the next to start first.
    const board = await engine.admin("GET", "/admin/queue")
    expect(board.status).toBe(200)
    expect(board.body.waitingGroups).toBe(2)
    expect(board.body.groups.map((g: any) => [g.accountId, g.waiting, g.first.position, g.last.position])).toEqual([
      [a.accountId, 5, 1, 6],
      [b.accountId, 1, 2, 2]
    ])

    // A job that started has no place: the field is absent.
    expect(await engine.work()).toBe(true)
    const read = [...(await Promise.all(aJobs.map((id) => a.get(`/v1/jobs/${id}`)))), await b.get(`/v1/jobs/${bJob}`)]
    const done = read.map((got) => got.body).filter((job) => job.status !== "pending")
    expect(done).toHaveLength(1)
    expect(done[0]).not.toHaveProperty("queue")
    // The places move up once the queue is read again (at most once per poll interval), and the
    // run the worker just ended (the demo's: milliseconds) is the run time now.
    expect(await waitFor(async () => (await queueOf(a, aJobs[4]!)).position === 5)).toBe(true)
    expect(runMs(await queueOf(a, aJobs[4]!))).toBeLessThan(2_000)
  })

  it("reads the queue once per poll interval for every reader, and not for a submit", async () => {
    let reads = 0
    const counted = Layer.effectContext(Effect.gen(function*() {
      const context = yield* Effect.context<Layer.Success<typeof layerMemoryStores>>()
      const repo = Context.get(context, AdminReadRepo)
      return Context.add(context, AdminReadRepo, { ...repo, waitingSummary: Effect.suspend(() => (reads++, repo.waitingSummary)) })
    })).pipe(Layer.provide(layerMemoryStores))
    engine = await makeHttpEngine({ pollIntervalMs: 60_000 }, { stores: counted })
    const a = await engine.account({ maxConcurrentJobs: 50 })
    const ids = await submitMany(a, 15)
    expect(reads).toBe(0)
    const places = await Promise.all(ids.map(async (id) => (await a.get(`/v1/jobs/${id}`)).body.queue.position))
    expect(places).toEqual(ids.map((_, i) => i + 1))
    expect(reads).toBe(1)
    await submitMany(a, 3)
    await a.get(`/v1/jobs/${ids[0]}`)
    expect(reads).toBe(1)
  })

  it("sets submit's estimatedCompletionTime from the queue when jobs wait ahead", async () => {
    // One read of the queue for the whole test: the submit and the GET after it count from the same one.
    engine = await makeHttpEngine({ pollIntervalMs: 60_000 })
    const a = await engine.account()
    const [first] = await submitMany(a, 1)
    const alone = (await a.get(`/v1/jobs/${first}`)).body.queue as Queue
    expect(alone.position).toBe(1)
    await submitMany(a, 3)
    const before = Date.now()
    const next = await a.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "late" } })
    const place = (await a.get(`/v1/jobs/${next.body.jobId}`)).body.queue as Queue
    // The queue was read once (before the three submits): the new job counts one job ahead at least.
    expect(place.ahead).toBeGreaterThanOrEqual(1)
    const submitted = Date.parse(next.body.estimatedCompletionTime)
    // The same estimate as the job's place (read a moment later), well past the catalog's run time alone.
    expect(Math.abs(submitted - Date.parse(place.estimatedCompletionAt.p50))).toBeLessThan(1_000)
    const runMs = Date.parse(place.estimatedCompletionAt.p50) - Date.parse(place.estimatedStartAt.p50)
    expect(submitted - before).toBeGreaterThan(runMs)
  })
})

describe("the status stream's queue events", () => {
  const open = (key: string, jobId: string) =>
    engine!.handler(new Request(`${BASE}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` } }))

  it("tells a pending job's place when the stream opens and when it changes, without ids, beside the status events", async () => {
    engine = await makeHttpEngine({ pollIntervalMs: 50 })
    const a = await engine.account()
    const aJobs = await submitMany(a, 3)
    const response = await open(a.key, aJobs[2]!)
    const events: Array<ServerEvent> = []
    const reading = (async () => {
      for await (const event of readEvents(response.body!)) events.push(event)
    })()
    const places = () => events.filter((e) => e.event === "queue").map((e) => JSON.parse(e.data).position)
    expect(await waitFor(() => places().length === 1)).toBe(true)
    expect(places()).toEqual([3])
    // The status event comes first, as spec clients (onmessage) see it; the queue event has no id
    // of its own, so the last event id (what a resume sends) stays the status's.
    expect(events[0]).toMatchObject({ event: "message", id: "1" })
    expect(events[1]).toMatchObject({ event: "queue", id: "1" })

    await a.post(`/v1/jobs/${aJobs[0]}/cancel`)
    expect(await waitFor(() => places().at(-1) === 2)).toBe(true)
    await a.post(`/v1/jobs/${aJobs[1]}/cancel`)
    expect(await waitFor(() => places().at(-1) === 1)).toBe(true)
    // Places are sent on a change only, at most once per refresh.
    expect(places()).toEqual([3, 2, 1])

    await a.post(`/v1/jobs/${aJobs[2]}/cancel`)
    await reading
    const statuses = events.filter((e) => e.event === "message").map((e) => JSON.parse(e.data).status)
    expect(statuses).toEqual(["pending", "cancelled"])
  })
})
