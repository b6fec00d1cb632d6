/** The Replicate adapter against the Replicate simulator: the contract the engine relies on. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { replicateProvider } from "genjobs/providers/replicate"
import type { GenerationProvider, ProviderOutput, ProviderStatus, Succeeded } from "../../src/ports/Provider.js"
import { emptyLogMark, planLogAppend } from "../../src/domain/providerLogs.js"
import { type ReplicateSimulator, signReplicateWebhook, startReplicateSimulator } from "../simulators/replicate.js"
import { bytesOf, closedPort, pollUntilDone, requestFor, started, startReceiver, textOf } from "./support.js"

const VERSION = "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa"

let sim: ReplicateSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startReplicateSimulator({ durationMs: 150, largeFileBytes: 3 * 1024 * 1024, pageSize: 3 })
  receiver = await startReceiver()
  provider = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, webhookSecret: sim.webhookSecret, requestTimeoutMs: 2000 })
})
afterAll(async () => {
  await sim.close()
  await receiver.close()
})
beforeEach(() => sim.reset())

const only = (outputs: ReadonlyArray<ProviderOutput>) => {
  expect(outputs).toHaveLength(1)
  return outputs[0]!
}

describe("Replicate: generations", () => {
  it.live("creates a prediction of an owner/name model and polls it to its output file", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "a lighthouse" })
      const handle = yield* started(provider, request)
      expect(handle.data).toBeUndefined()
      expect(JSON.stringify(handle)).not.toContain(sim.apiToken)
      const status = yield* pollUntilDone(provider, handle, request)
      assertSucceeded(status)
      const output = only(status.outputs)
      expect(output).toMatchObject({ type: "image", contentType: "image/png", source: { _tag: "Url" } })
      const { bytes: png } = yield* bytesOf(output.source)
      expect([...png.slice(1, 4)]).toEqual([0x50, 0x4e, 0x47])
      expect(sim.counters.starts).toBe(1)
      expect(sim.counters.startsByMarker.get("a lighthouse")).toBe(1)
      expect(sim.predictions().at(-1)).toMatchObject({ model: "acme/image-gen", version: null, webhook: null })
    }))

  it.live("creates a prediction of a pinned version through POST /v1/predictions", () =>
    Effect.gen(function*() {
      const request = requestFor(`acme/image-gen:${VERSION}`, { prompt: "p" })
      yield* pollUntilDone(provider, yield* started(provider, request), request)
      expect(sim.predictions().at(-1)).toMatchObject({ version: VERSION })
    }))

  it.live("turns a text model's list of strings into one text output", () =>
    Effect.gen(function*() {
      const request = requestFor("meta/llama-text", { prompt: "why?" }, { category: "text" })
      const status = yield* pollUntilDone(provider, yield* started(provider, request), request)
      assertSucceeded(status)
      const output = only(status.outputs)
      expect(output.type).toBe("text")
      expect(yield* textOf(output.source)).toBe("Simulated answer to: why?")
    }))

  it.live("streams a large output file from its URL", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/large-video", { prompt: "long" }, { category: "video" })
      const status = yield* pollUntilDone(provider, yield* started(provider, request), request)
      assertSucceeded(status)
      const output = only(status.outputs)
      expect(output).toMatchObject({ type: "video", contentType: "video/mp4" })
      expect((yield* bytesOf(output.source)).bytes.length).toBe(3 * 1024 * 1024)
    }))

  it.live("reports a failed prediction with Replicate's error message", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "p", sim_fail: "CUDA out of memory" })
      const status = yield* pollUntilDone(provider, yield* started(provider, request), request)
      expect(status).toEqual({ _tag: "Failed", message: "CUDA out of memory" })
    }))

  it.live("cancels a running prediction, which then ends as failed", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "p", sim_duration_ms: 60_000 })
      const handle = yield* started(provider, request)
      yield* provider.cancel(handle, request)
      expect(sim.counters.cancels).toBe(1)
      expect(yield* provider.poll(handle, request)).toEqual({ _tag: "Failed", message: "The prediction was cancelled at Replicate", providerCode: "canceled" })
      // Cancelling again (or after the end) is no error.
      yield* provider.cancel(handle, request)
      yield* provider.cancel({ id: "unknown" }, request)
    }))

  it.live("reads progress from the prediction's logs while it runs", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "p", sim_duration_ms: 2000 })
      const handle = yield* started(provider, request)
      yield* Effect.sleep(1000)
      const status = yield* provider.poll(handle, request)
      expect(status._tag).toBe("Running")
      expect(status._tag === "Running" ? status.progress : undefined).toBeGreaterThanOrEqual(40)
    }))

  it.live("hands over the prediction's whole log, complete lines only, and its token for redaction", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "p", sim_duration_ms: 2000 })
      const handle = yield* started(provider, request)
      yield* Effect.sleep(1000)
      const running = yield* provider.poll(handle, request)
      if (running._tag !== "Running") throw new Error(`expected Running, got ${running._tag}`)
      // The bar still being drawn has no newline yet: it is not a line until it ends.
      expect(running.logs).toEqual([
        "Using seed: 42",
        "Downloading weights from https://weights.replicate.test/sim/model.tar?X-Amz-Signature=simsignature&X-Amz-Credential=simkey"
      ])
      expect(provider.logSecrets).toEqual([sim.apiToken])
      // Kept as the engine keeps it: the signed URL's query goes.
      const kept = planLogAppend(emptyLogMark, running.logs!, provider.logSecrets!, 0)!
      expect(kept.lines.map((l) => l.line)).toEqual([
        "Using seed: 42",
        "Downloading weights from https://weights.replicate.test/sim/model.tar?[REDACTED]"
      ])
    }))
})

describe("Replicate: errors", () => {
  it.live("answers 429 with its Retry-After as retryable rejections, then starts once", () =>
    Effect.gen(function*() {
      sim.rateLimitNext(3, { retryAfterSeconds: 2, on: "start" })
      const request = requestFor("acme/image-gen", { prompt: "busy" })
      for (let i = 0; i < 3; i++) {
        const error = yield* Effect.flip(provider.start(request))
        expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 2000, httpStatus: 429 })
      }
      const status = yield* pollUntilDone(provider, yield* started(provider, request), request)
      expect(status._tag).toBe("Succeeded")
      expect(sim.counters.startsByMarker.get("busy")).toBe(1)
    }))

  it.live("refuses invalid input (422), a bad token (401) and payment (402) for good, with the provider's detail", () =>
    Effect.gen(function*() {
      sim.errorNext(1, 422, { body: { title: "Input validation failed", detail: "- prompt: prompt is required", status: 422 }, on: "start" })
      const invalid = yield* Effect.flip(provider.start(requestFor("acme/image-gen", {})))
      expect(invalid).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 422 })
      expect(invalid.message).toContain("prompt is required")

      const wrongToken = replicateProvider({ apiToken: "r8_wrong", baseUrl: sim.url })
      const unauthorized = yield* Effect.flip(wrongToken.start(requestFor("acme/image-gen", { prompt: "p" })))
      expect(unauthorized).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 401 })
      expect(unauthorized.message).not.toContain("r8_wrong")

      sim.errorNext(1, 402, { body: { title: "Payment required", detail: "You have insufficient credit", status: 402 }, on: "start" })
      expect(yield* Effect.flip(provider.start(requestFor("acme/image-gen", { prompt: "p" })))).toMatchObject({ retryable: false, httpStatus: 402 })
      expect(sim.counters.starts).toBe(0)
    }))

  it.live("refuses a provider model that names no Replicate model, before any request", () =>
    Effect.gen(function*() {
      for (const model of ["not a model", "../v1", "acme/..", "owner/name:notahash"]) {
        const error = yield* Effect.flip(provider.start(requestFor(model, { prompt: "p" })))
        expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false })
      }
      expect(sim.counters.requests).toBe(0)
    }))

  it.live("asks again after a 5xx; a gateway error on a start leaves its outcome unknown", () =>
    Effect.gen(function*() {
      sim.errorNext(1, 503, { message: "overloaded", on: "start" })
      expect(yield* Effect.flip(provider.start(requestFor("acme/image-gen", { prompt: "p" })))).toMatchObject({
        _tag: "ProviderRejected",
        retryable: true,
        httpStatus: 503
      })
      sim.errorNext(1, 502, { message: "bad gateway", on: "start" })
      expect((yield* Effect.flip(provider.start(requestFor("acme/image-gen", { prompt: "p" }))))._tag).toBe("ProviderUnreachable")
      const request = requestFor("acme/image-gen", { prompt: "p" })
      const handle = yield* started(provider, request)
      sim.errorNext(1, 500, { message: "oops", on: "poll" })
      expect(yield* Effect.flip(provider.poll(handle, request))).toMatchObject({ retryable: true, httpStatus: 500 })
    }))

  it.live("answers ProviderUnreachable for a closed port, a slow answer and a malformed answer", () =>
    Effect.gen(function*() {
      const closed = replicateProvider({ apiToken: "t", baseUrl: `http://127.0.0.1:${yield* Effect.promise(closedPort)}` })
      const request = requestFor("acme/image-gen", { prompt: "p" })
      expect(yield* Effect.flip(closed.start(request))).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
      expect((yield* Effect.flip(closed.poll({ id: "x" }, request)))._tag).toBe("ProviderUnreachable")

      const impatient = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, requestTimeoutMs: 100 })
      sim.slowNext(1, 2_000, { on: "start" })
      const slow = yield* Effect.flip(impatient.start(request))
      expect(slow).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
      expect(slow.message).toContain("did not answer within 100 ms")

      sim.malformedNext(1, { on: "start" })
      expect(yield* Effect.flip(provider.start(request))).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
      const handle = yield* started(provider, request)
      sim.malformedNext(1, { on: "poll" })
      expect((yield* Effect.flip(provider.poll(handle, request)))._tag).toBe("ProviderUnreachable")
    }))
})

describe("Replicate: a start that never reached it, and one whose answer was lost", () => {
  const request = requestFor("acme/image-gen", { prompt: "p" })
  const failedStart = (baseUrl: string) => Effect.flip(replicateProvider({ apiToken: "t", baseUrl, requestTimeoutMs: 2000 }).start(request))

  it.live("a name that does not resolve, and TLS that fails in its handshake, are never sent", () =>
    Effect.gen(function*() {
      expect(yield* failedStart("http://replicate.invalid")).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
      // The simulator speaks plain HTTP: a TLS client's handshake fails before any request is written.
      expect(yield* failedStart(sim.url.replace("http:", "https:"))).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
      expect(sim.counters.requests).toBe(0)
    }))

  it.live("a connection reset after the request was written leaves the outcome unknown", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Server>((resolve) => {
            const s = createServer((req) => req.on("end", () => req.socket.destroy()).resume())
            s.listen(0, "127.0.0.1", () => resolve(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((done) => s.close(() => done())))
      )
      const error = yield* failedStart(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      expect(error).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
    })))

  it.live("a simulator that goes down refuses connections (never sent) and takes starts again once it is back", () =>
    Effect.gen(function*() {
      yield* Effect.promise(() => sim.goDown())
      expect(yield* Effect.flip(provider.start(request))).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
      yield* Effect.promise(() => sim.comeBack())
      yield* started(provider, request)
      expect(sim.counters.starts).toBe(1)
    }))

  it.live("a prediction created while its answer was lost is found by recover", () =>
    Effect.gen(function*() {
      const callbackUrl = `${receiver.url}/v1/providers/replicate/callbacks/job_late`
      const late = requestFor("acme/image-gen", { prompt: "late" }, { callbackUrl })
      sim.answerLateNext(1, 5_000, { on: "start" })
      const impatient = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, requestTimeoutMs: 200 })
      expect(yield* Effect.flip(impatient.start(late))).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
      expect(sim.counters.starts).toBe(1)
      const found = yield* provider.recover!(late)
      expect(found).toEqual({ _tag: "Found", handle: { id: sim.predictions().at(-1)!["id"] } })
    }))
})

describe("Replicate: webhooks", () => {
  it.live("sends a completed webhook that verifies, naming the prediction", () =>
    Effect.gen(function*() {
      const request = requestFor("acme/image-gen", { prompt: "hook" }, { callbackUrl: `${receiver.url}/v1/providers/replicate/callbacks/job_1` })
      const handle = yield* started(provider, request)
      const before = receiver.received.length
      const callback = yield* Effect.promise(() => receiver.nth(before + 1))
      expect(yield* provider.verifyCallback!(callback)).toEqual({ handleId: handle.id })
      expect(sim.predictions().at(-1)).toMatchObject({ webhook_events_filter: ["completed"] })
    }))

  it.live("refuses a tampered body, a stale or future timestamp, a wrong secret and missing headers", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ id: "abc", status: "succeeded" })
      const verify = (headers: Record<string, string>, raw = body, with_ = provider) =>
        Effect.flip(with_.verifyCallback!({ headers, body: new TextEncoder().encode(raw) }))
      const good = signReplicateWebhook(body, sim.webhookSecret)
      expect(yield* provider.verifyCallback!({ headers: good, body: new TextEncoder().encode(body) })).toEqual({ handleId: "abc" })

      expect((yield* verify(good, body.replace("abc", "abd")))._tag).toBe("CallbackRejected")
      const now = Math.floor(Date.now() / 1000)
      expect((yield* verify(signReplicateWebhook(body, sim.webhookSecret, { timestampSeconds: now - 301 }))).message).toContain("5 minutes")
      expect((yield* verify(signReplicateWebhook(body, sim.webhookSecret, { timestampSeconds: now + 400 }))).message).toContain("5 minutes")
      const otherSecret = replicateProvider({ apiToken: "t", baseUrl: sim.url, webhookSecret: `whsec_${Buffer.from("another secret").toString("base64")}` })
      expect((yield* verify(good, body, otherSecret))._tag).toBe("CallbackRejected")
      expect((yield* verify({}))._tag).toBe("CallbackRejected")
      // Of several signatures (a secret being rotated), one matching is enough.
      const rotated = { ...good, "webhook-signature": `v1,bm90IGl0 ${good["webhook-signature"]}` }
      expect(yield* provider.verifyCallback!({ headers: rotated, body: new TextEncoder().encode(body) })).toEqual({ handleId: "abc" })
    }))

  it.live("fetches the signing secret from Replicate when none is configured", () =>
    Effect.gen(function*() {
      const fetching = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url })
      const body = JSON.stringify({ id: "xyz" })
      const callback = { headers: signReplicateWebhook(body, sim.webhookSecret), body: new TextEncoder().encode(body) }
      expect(yield* fetching.verifyCallback!(callback)).toEqual({ handleId: "xyz" })
      const unreachable = replicateProvider({ apiToken: sim.apiToken, baseUrl: `http://127.0.0.1:${yield* Effect.promise(closedPort)}` })
      expect((yield* Effect.flip(unreachable.verifyCallback!(callback))).message).toContain("could not be fetched")
    }))
})

describe("Replicate: recover", () => {
  /** A simulator of its own, so the account's list of predictions holds only the test's (3 a page). */
  const ownAccount = Effect.acquireRelease(
    Effect.promise(() => startReplicateSimulator({ durationMs: 150, pageSize: 3 })),
    (own) => Effect.promise(() => own.close())
  ).pipe(Effect.map((own) => replicateProvider({ apiToken: own.apiToken, baseUrl: own.url, webhookSecret: own.webhookSecret, requestTimeoutMs: 2000 })))
  const marked = (prompt: string, job = "job_lost") =>
    requestFor("acme/image-gen", { prompt }, { callbackUrl: `${receiver.url}/v1/providers/replicate/callbacks/${job}` })

  it.live("finds the job's prediction by the key in its webhook URL, paging back; reading the whole list, finds nothing for a job never started", () =>
    Effect.gen(function*() {
      const own = yield* ownAccount
      const lost = marked("lost")
      const handle = yield* started(own, lost)
      // Newer predictions of other jobs push it to a later page.
      for (let i = 0; i < 7; i++) yield* started(own, marked(`other ${i}`, `job_${i}`))
      expect(yield* own.recover!(lost)).toEqual({ _tag: "Found", handle: { id: handle.id } })
      // The whole list read, to its end: nothing for this job, once a request of it has had the request timeout to show.
      expect(yield* own.recover!(marked("never started", "job_never"))).toEqual({ _tag: "NotStarted", settledAfterMs: 2000 })
      // No callback URL, no marker: a prediction of this job could not be told apart.
      expect(yield* own.recover!(requestFor("acme/image-gen", { prompt: "no callback" }))).toEqual({ _tag: "Unknown" })
    }))

  it.live("cannot rule a start out when the list is cut short (past 10 pages)", () =>
    Effect.gen(function*() {
      const own = yield* ownAccount
      const absent = marked("absent", "job_absent")
      for (let i = 0; i < 30; i++) yield* started(own, marked(`filler ${i}`, `job_${i}`))
      expect(yield* own.recover!(absent)).toEqual({ _tag: "NotStarted", settledAfterMs: 2000 })
      yield* started(own, marked("one more", "job_more"))
      expect(yield* own.recover!(absent)).toEqual({ _tag: "Unknown" })
    }))

  it.live("cannot rule a start out when a prediction in the window has no webhook: it may be the job's, from a run without a public URL", () =>
    Effect.gen(function*() {
      const own = yield* ownAccount
      const absent = marked("absent", "job_absent")
      yield* started(own, marked("marked", "job_other"))
      expect(yield* own.recover!(absent)).toEqual({ _tag: "NotStarted", settledAfterMs: 2000 })
      yield* started(own, requestFor("acme/image-gen", { prompt: "unmarked" }))
      expect(yield* own.recover!(absent)).toEqual({ _tag: "Unknown" })
    }))
})

function assertSucceeded(status: ProviderStatus): asserts status is Succeeded {
  expect(status._tag).toBe("Succeeded")
}
