import { createClient, type FetchLike, type Job, type QueuePlace } from "genjobs/client"
import { describe, expect, it } from "vitest"

const ORIGIN = "http://engine.test"

const job = (status: Job["status"], queue?: QueuePlace): Job => ({
  jobId: "job_q",
  status,
  progress: status === "completed" ? 100 : status === "processing" ? 50 : 0,
  providerProgress: null,
  output: null,
  outputs: null,
  error: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  completedAt: null,
  ...(queue === undefined ? {} : { queue })
})

const place = (position: number): QueuePlace => ({
  position,
  ahead: position - 1,
  estimatedStartAt: { p50: "2026-01-01T00:01:00.000Z", p90: "2026-01-01T00:02:00.000Z" },
  estimatedCompletionAt: { p50: "2026-01-01T00:01:30.000Z", p90: "2026-01-01T00:03:00.000Z" }
})

describe("onQueueUpdate", () => {
  it("gets the status stream's queue events, each place once, and onUpdate only the statuses", async () => {
    const body = [
      `id: 1\ndata: ${JSON.stringify(job("pending"))}\n\n`,
      `event: queue\ndata: ${JSON.stringify(place(3))}\n\n`,
      `event: queue\ndata: ${JSON.stringify(place(3))}\n\n`,
      `event: queue\ndata: ${JSON.stringify(place(1))}\n\n`,
      `id: 2\ndata: ${JSON.stringify(job("processing"))}\n\n`,
      `id: 3\ndata: ${JSON.stringify(job("completed"))}\n\n`
    ].join("")
    const fetch: FetchLike = async (url) =>
      url.endsWith("/events")
        ? new Response(body, { headers: { "content-type": "text/event-stream" } })
        : new Response("{}", { status: 500 })
    const client = createClient({ baseUrl: ORIGIN, apiKey: "k", fetch })
    const places: Array<number> = []
    const statuses: Array<string> = []
    const final = await client.wait("job_q", {
      onUpdate: (j) => statuses.push(j.status),
      onQueueUpdate: (q) => places.push(q.position)
    })
    expect(final.status).toBe("completed")
    expect(places).toEqual([3, 1])
    expect(statuses).toEqual(["pending", "processing", "completed"])
  })

  it("gets a polled job's queue field when the server has no stream", async () => {
    const answers = [job("pending", place(2)), job("pending", place(2)), job("pending", place(1)), job("completed")]
    const fetch: FetchLike = async (url) => {
      if (url.endsWith("/events")) return new Response("not here", { status: 404 })
      return new Response(JSON.stringify(answers.shift()), { headers: { "content-type": "application/json" } })
    }
    const client = createClient({ baseUrl: ORIGIN, apiKey: "k", fetch })
    const places: Array<QueuePlace> = []
    const final = await client.wait("job_q", { onQueueUpdate: (q) => places.push(q), waitSeconds: 0 })
    expect(final.status).toBe("completed")
    expect(places.map((q) => q.position)).toEqual([2, 1])
    expect(places[1]).toEqual(place(1))
  })
})
