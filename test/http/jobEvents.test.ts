import { genjobsNode } from "genjobs/http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readEvents, type ServerEvent } from "../../src/client/eventStream.js"
import { type HttpEngine, BASE, makeHttpEngine } from "../support/httpEngine.js"
import { waitFor } from "../support/waitFor.js"

const TEXT = "demo/text-gen/text-to-text"

describe("the job status stream and long-poll", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  const open = (key: string, jobId: string, headers: Record<string, string> = {}) =>
    engine.handler(new Request(`${BASE}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}`, ...headers } }))

  /**
   * Reads a stream's status events until it ends, calling `onEvent` as each arrives. A pending
   * job's `queue` events are left out, as a spec client's `onmessage` never sees them
   * (test/http/queuePosition.test.ts tests them).
   */
  const collect = async (response: Response, onEvent: (event: ServerEvent) => void = () => undefined) => {
    const events: Array<ServerEvent> = []
    for await (const event of readEvents(response.body!)) {
      if (event.event !== "message") continue
      events.push(event)
      onEvent(event)
    }
    return events
  }

  const statuses = (events: ReadonlyArray<ServerEvent>) => events.map((e) => [e.id, JSON.parse(e.data).status])

  /** Whether `answer` is still unanswered when asked. */
  const stillOpen = (answer: Promise<unknown>) => {
    let open = true
    const answered = () => {
      open = false
    }
    void answer.then(answered, answered)
    return () => open
  }

  it("streams pending, processing and completed, each as GET answers it, then ends", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x", demoDelayMs: 300 } })
    const response = await open(acc.key, jobId)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    let first!: () => void
    const sawPending = new Promise<void>((resolve) => (first = resolve))
    const events = collect(response, () => first())
    await sawPending
    expect(await engine.work()).toBe(true)
    const seen = await events
    expect(statuses(seen)).toEqual([["1", "pending"], ["2", "processing"], ["3", "completed"]])
    expect(JSON.parse(seen[2]!.data)).toEqual((await acc.get(`/v1/jobs/${jobId}`)).body)
  })

  it("streams a cancellation and resumes after the Last-Event-ID given", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    let first!: () => void
    const sawPending = new Promise<void>((resolve) => (first = resolve))
    const events = collect(await open(acc.key, jobId), () => first())
    await sawPending
    expect((await acc.post(`/v1/jobs/${jobId}/cancel`)).status).toBe(200)
    expect(statuses(await events)).toEqual([["1", "pending"], ["3", "cancelled"]])

    expect(statuses(await collect(await open(acc.key, jobId, { "last-event-id": "1" })))).toEqual([["3", "cancelled"]])
    // After the final event there is nothing left: the stream ends at once.
    expect(await collect(await open(acc.key, jobId, { "last-event-id": "3" }))).toEqual([])
  })

  it("ends at once a stream resumed at or past the final event's id, while the job is still pending", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    for (const lastEventId of ["3", "9"]) {
      const response = await open(acc.key, jobId, { "last-event-id": lastEventId })
      expect(response.status).toBe(200)
      expect(await collect(response)).toEqual([])
    }
    expect((await acc.get(`/v1/jobs/${jobId}`)).body.status).toBe("pending")
    await acc.post(`/v1/jobs/${jobId}/cancel`)
  })

  it("over node:http, answers a stream resumed after the current status at once, then gives the next event", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x", demoDelayMs: 50 } })
    // Node sends a response's headers with its first body bytes: the stream must write some at once,
    // not wait for the job to move on or for the first heartbeat (15 s).
    const server = createServer(genjobsNode({ fetch: engine.handler })).listen(0, "127.0.0.1")
    try {
      await new Promise((resolve) => server.once("listening", resolve))
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/jobs/${jobId}/events`
      const response = await fetch(url, { headers: { authorization: `Bearer ${acc.key}`, "last-event-id": "2" } })
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toContain("text/event-stream")
      const reader = response.body!.getReader()
      const first = await reader.read()
      expect(new TextDecoder().decode(first.value)).toBe(": open\n\n")
      reader.releaseLock()
      const rest = collect(response)
      expect(await engine.work()).toBe(true)
      // Processing (2) was seen before: the next event is the final one, and the stream ends.
      expect(statuses(await rest)).toEqual([["3", "completed"]])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it("streams under a base path", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    await acc.post(`/v1/jobs/${jobId}/cancel`)
    const response = await engine.handler(
      new Request(`${BASE}/api/genjobs/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${acc.key}` } }),
      { basePath: "/api/genjobs" }
    )
    expect(response.status).toBe(200)
    expect(statuses(await collect(response))).toEqual([["3", "cancelled"]])
  })

  it("refuses another account's job (403) and an unknown one (404) before streaming", async () => {
    const owner = await engine.account()
    const other = await engine.account()
    const { body: { jobId } } = await owner.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    const refused = await other.get(`/v1/jobs/${jobId}/events`)
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ success: false, error: { code: "UNAUTHORIZED_ACCESS" } })
    const missing = await owner.get("/v1/jobs/job_nope/events")
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({ success: false, error: { code: "JOB_NOT_FOUND" } })
    const noScope = await engine.account({ scopes: ["submit_job"] })
    expect((await noScope.get(`/v1/jobs/${jobId}/events`)).status).toBe(403)
    await owner.post(`/v1/jobs/${jobId}/cancel`)
  })

  /** A stream being collected, once its first event arrived (in an object: awaiting a promise of a promise waits for both). */
  const following = async (key: string, jobId: string) => {
    let first!: () => void
    const opened = new Promise<void>((resolve) => (first = resolve))
    const events = collect(await open(key, jobId), () => first())
    await opened
    return { events }
  }

  it("gives each of two streams on one job every event", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x", demoDelayMs: 300 } })
    const { events: a } = await following(acc.key, jobId)
    const { events: b } = await following(acc.key, jobId)
    expect(await engine.work()).toBe(true)
    const expected = [["1", "pending"], ["2", "processing"], ["3", "completed"]]
    expect(statuses(await a)).toEqual(expected)
    expect(statuses(await b)).toEqual(expected)
  })

  it("keeps a stream going when another stream on the same job closes", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    const { events: kept } = await following(acc.key, jobId)
    // Read up to the first event, then stop: leaving the loop cancels the stream.
    for await (const event of readEvents((await open(acc.key, jobId)).body!)) {
      expect(event.id).toBe("1")
      break
    }
    expect((await acc.post(`/v1/jobs/${jobId}/cancel`)).status).toBe(200)
    expect(statuses(await kept)).toEqual([["1", "pending"], ["3", "cancelled"]])
  })

  it("gives a stream opened after the job ended its final event, then ends", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x", demoDelayMs: 50 } })
    const { events: earlier } = await following(acc.key, jobId)
    expect(await engine.work()).toBe(true)
    expect(statuses(await earlier).at(-1)).toEqual(["3", "completed"])
    const later = await collect(await open(acc.key, jobId))
    expect(statuses(later)).toEqual([["3", "completed"]])
    expect(JSON.parse(later[0]!.data)).toEqual((await acc.get(`/v1/jobs/${jobId}`)).body)
  })

  it("long-polls GET until the job is final, saying so in Preference-Applied", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    const started = Date.now()
    const polled = acc.get(`/v1/jobs/${jobId}`, { prefer: "wait=10" })
    const held = stillOpen(polled)
    // A plain GET sent after it is answered first: the poll is held while the job is pending.
    expect((await acc.get(`/v1/jobs/${jobId}`)).body.status).toBe("pending")
    expect(held()).toBe(true)
    expect(await engine.work()).toBe(true)
    const answer = await polled
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ jobId, status: "completed", progress: 100 })
    expect(answer.headers.get("preference-applied")).toBe("wait=10")
  })

  it("answers after N seconds when the job stays open, clamps N to 60, and changes nothing without Prefer", async () => {
    const acc = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    const started = Date.now()
    const waited = await acc.get(`/v1/jobs/${jobId}`, { prefer: "respond-async, wait=1" })
    expect(Date.now() - started).toBeGreaterThanOrEqual(950)
    expect(waited.body).toMatchObject({ jobId, status: "pending" })
    expect(waited.headers.get("preference-applied")).toBe("wait=1")

    const plain = await acc.get(`/v1/jobs/${jobId}`)
    expect(plain.body.status).toBe("pending")
    expect(plain.headers.get("preference-applied")).toBeNull()

    await acc.post(`/v1/jobs/${jobId}/cancel`)
    const clamped = await acc.get(`/v1/jobs/${jobId}`, { prefer: "wait=600" })
    expect(clamped.body.status).toBe("cancelled")
    expect(clamped.headers.get("preference-applied")).toBe("wait=60")
  })

  it("long-polls a submit: the job's current fields beside the submit's own", async () => {
    const acc = await engine.account()
    const started = Date.now()
    const submitted = acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } }, { prefer: "wait=10" })
    const held = stillOpen(submitted)
    // The job is stored (and the submit held) before the worker looks for it.
    expect(await waitFor(async () => (await acc.get("/v1/jobs")).body.jobs.length === 1)).toBe(true)
    expect(held()).toBe(true)
    expect(await engine.work()).toBe(true)
    const answer = await submitted
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ status: "completed", progress: 100, error: null })
    expect(answer.body.requestId).toBeTypeOf("string")
    expect(answer.body.costMicroCents).toBeGreaterThan(0)
    expect(answer.headers.get("preference-applied")).toBe("wait=10")

    const plain = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    expect(plain.body.status).toBe("pending")
    expect(plain.headers.get("preference-applied")).toBeNull()
  })
})
