import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { type Engine, signatureHeader } from "genjobs"
import { createClient, type FetchLike, type Job, verifyWebhook } from "genjobs/client"
import { makeEffectClient } from "genjobs/client/effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newKey, type Target } from "./suite.js"
import { webHandlerTarget } from "./webHandlerTarget.js"

const ORIGIN = "http://engine.test"
const SLUG = "demo/image-gen/text-to-image"

let engine: Engine
let target: Target
beforeAll(async () => {
  ({ engine, target } = await webHandlerTarget(0))
})
afterAll(() => engine.dispose())

const job = (status: Job["status"], progress: number): Job => ({
  jobId: "job_s",
  status,
  progress,
  providerProgress: null,
  output: null,
  outputs: null,
  error: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  completedAt: null
})

const sse = (events: ReadonlyArray<[string, Job]>) =>
  new Response(events.map(([id, j]) => `id: ${id}\nevent: status\ndata: ${JSON.stringify(j)}\n\n`).join(""), {
    headers: { "content-type": "text/event-stream" }
  })

describe("waiting on the status stream", () => {
  it("follows events to the final job, resuming a dropped stream with Last-Event-ID", async () => {
    const resumedFrom: Array<string | null> = []
    let polls = 0
    const events: FetchLike = async (url, init) => {
      if (url.endsWith("/events")) {
        resumedFrom.push(new Headers(init.headers).get("last-event-id"))
        // The first stream ends after one event, as a dropped connection would.
        return resumedFrom.length === 1 ? sse([["1", job("pending", 0)]]) : sse([["2", job("processing", 50)], ["3", job("completed", 100)]])
      }
      polls++
      return new Response("{}", { status: 500 })
    }
    const client = createClient({ baseUrl: ORIGIN, apiKey: "k", fetch: events })
    const seen: Array<string> = []
    const final = await client.wait("job_s", { onUpdate: (j) => seen.push(j.status) })
    expect(final.status).toBe("completed")
    expect(seen).toEqual(["pending", "processing", "completed"])
    expect(resumedFrom).toEqual([null, "1"])
    expect(polls).toBe(0)
  })

  it("follows the engine's own stream to the final job, without polling", async () => {
    const paths: Array<string> = []
    const counting: FetchLike = (url, init) => {
      paths.push(`${new URL(url).pathname} ${new Headers(init.headers).get("prefer") ?? ""}`.trim())
      return target.fetch(url, init)
    }
    const client = createClient({ baseUrl: ORIGIN, apiKey: await newKey(target), fetch: counting })
    const { jobId } = await client.submit(SLUG, { prompt: "p" })
    const seen: Array<string> = []
    const waited = client.wait(jobId, { onUpdate: (j) => seen.push(j.status) })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await client.cancel(jobId)
    expect((await waited).status).toBe("cancelled")
    expect(seen).toEqual(["pending", "cancelled"])
    expect(paths.filter((p) => p.endsWith("/events"))).toHaveLength(1)
    expect(paths.filter((p) => p.includes("wait="))).toHaveLength(0)
  })

  it("falls back to polling when the server has no stream, and asks for it once per client", async () => {
    const paths: Array<string> = []
    // An engine without the stream: its route answers the router's own 404.
    const counting: FetchLike = (url, init) => {
      paths.push(`${new URL(url).pathname} ${new Headers(init.headers).get("prefer") ?? ""}`.trim())
      return target.fetch(url.endsWith("/events") ? url.replace(/\/events$/, "/no-such-route") : url, init)
    }
    const client = createClient({ baseUrl: ORIGIN, apiKey: await newKey(target), fetch: counting })
    const { jobId } = await client.submit(SLUG, { prompt: "p" })
    await client.cancel(jobId)
    expect((await client.wait(jobId)).status).toBe("cancelled")
    expect((await client.wait(jobId)).status).toBe("cancelled")
    expect(paths.filter((p) => p.endsWith("/events"))).toHaveLength(1)
    expect(paths.filter((p) => p.includes("wait=20"))).toHaveLength(2)
  })
})

describe("the Effect client", () => {
  // FetchHttpClient over the engine's web handler instead of the network.
  const viaEngine = FetchHttpClient.layer.pipe(
    Layer.provide(Layer.succeed(FetchHttpClient.Fetch, (input, init) => engine.fetch(new Request(input, init))))
  )

  it("calls the API with the key, slugs percent-encoded on the {slug} route, refusals typed", async () => {
    const apiKey = await newKey(target)
    const result = await Effect.gen(function*() {
      const client = yield* makeEffectClient({ baseUrl: ORIGIN, apiKey })
      // The client percent-encodes path params itself (Effect 4): the slug goes as it is.
      const model = yield* client.models.get({ params: { modelId: SLUG } })
      const account = yield* client.account.get()
      const missing = yield* client.jobs.get({ params: { jobId: "job_nope" } }).pipe(Effect.flip)
      return { model, account, missing }
    }).pipe(Effect.provide(viaEngine), Effect.runPromise)
    expect(result.model.id).toBe(SLUG)
    expect(result.account.account.balanceMicroCents).toBe(10_000_000)
    expect(result.missing).toMatchObject({ success: false, error: { code: "JOB_NOT_FOUND" } })
  })
})

describe("verifyWebhook of genjobs/client (WebCrypto)", () => {
  const body = JSON.stringify({ jobId: "job_1", status: "completed" })
  const now = 1_763_822_400

  it("accepts what the engine signs, with either secret during a rotation", async () => {
    const headers = { "X-Service-Timestamp": String(now), "X-Service-Signature": signatureHeader(["new", "old"], now, body) }
    expect(await verifyWebhook({ secret: "old", headers, body, nowSeconds: now })).toEqual({ ok: true, timestamp: now })
    expect(await verifyWebhook({ secret: "new", headers: new Headers(headers), body, nowSeconds: now + 10 })).toEqual({ ok: true, timestamp: now })
  })

  it("refuses another secret or body, a stale timestamp and missing headers", async () => {
    const headers = { "x-service-timestamp": String(now), "x-service-signature": signatureHeader(["s"], now, body) }
    expect(await verifyWebhook({ secret: "t", headers, body, nowSeconds: now })).toEqual({ ok: false, reason: "bad_signature" })
    expect(await verifyWebhook({ secret: "s", headers, body: `${body} `, nowSeconds: now })).toEqual({ ok: false, reason: "bad_signature" })
    expect(await verifyWebhook({ secret: "s", headers, body, nowSeconds: now + 301 })).toEqual({ ok: false, reason: "stale_timestamp" })
    expect(await verifyWebhook({ secret: "s", headers: {}, body })).toEqual({ ok: false, reason: "missing_headers" })
  })
})
