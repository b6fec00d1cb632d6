/** The fal.ai adapter against the fal.ai simulator: the contract the engine relies on. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { falProvider, parseFalPublicKeys } from "genjobs/providers/fal"
import { generateKeyPairSync } from "node:crypto"
import type { GenerationProvider, ProviderOutput, ProviderStatus, Succeeded } from "../../src/ports/Provider.js"
import { type FalSimulator, signFalWebhook, startFalSimulator } from "../simulators/fal.js"
import { bytesOf, closedPort, pollUntilDone, requestFor, started, startReceiver, textOf } from "./support.js"

let sim: FalSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startFalSimulator({ durationMs: 150, largeFileBytes: 2 * 1024 * 1024 })
  receiver = await startReceiver()
  provider = falProvider({ apiKey: sim.apiKey, baseUrl: sim.url, webhookPublicKeys: sim.publicKeysJwks, requestTimeoutMs: 2000 })
})
afterAll(async () => {
  await sim.close()
  await receiver.close()
})
beforeEach(() => sim.reset())

function assertSucceeded(status: ProviderStatus): asserts status is Succeeded {
  expect(status._tag).toBe("Succeeded")
}

const run = (model: string, input: Record<string, unknown>, category = "image") =>
  Effect.gen(function*() {
    const request = requestFor(model, input, { category })
    return yield* pollUntilDone(provider, yield* started(provider, request), request)
  })

const only = (status: ProviderStatus): ProviderOutput => {
  assertSucceeded(status)
  expect(status.outputs).toHaveLength(1)
  return status.outputs[0]!
}

describe("fal.ai: generations", () => {
  it.live("queues a request and polls it through IN_QUEUE and IN_PROGRESS to its images", () =>
    Effect.gen(function*() {
      // A second long, so that the first poll finds it running even on a loaded machine.
      const request = requestFor("fal-ai/flux/dev", { prompt: "a lighthouse", sim_duration_ms: 1_000 })
      const handle = yield* started(provider, request)
      expect(handle.data).toEqual({
        statusUrl: `${sim.url}/fal-ai/flux/requests/${handle.id}/status`,
        responseUrl: `${sim.url}/fal-ai/flux/requests/${handle.id}`,
        cancelUrl: `${sim.url}/fal-ai/flux/requests/${handle.id}/cancel`
      })
      expect(JSON.stringify(handle)).not.toContain(sim.apiKey)
      expect((yield* provider.poll(handle, request))._tag).toBe("Running")
      const output = only(yield* pollUntilDone(provider, handle, request))
      expect(output).toMatchObject({ type: "image", contentType: "image/png", metadata: { width: 1, height: 1 }, source: { _tag: "Url" } })
      expect([...(yield* bytesOf(output.source)).bytes.slice(1, 4)]).toEqual([0x50, 0x4e, 0x47])
      expect(sim.counters.startsByMarker.get("a lighthouse")).toBe(1)
      expect(sim.counters.polls).toBeGreaterThanOrEqual(2)
    }))

  it.live("asks for the request's logs while it runs and hands them over whole, with the key for redaction", () =>
    Effect.gen(function*() {
      const request = requestFor("fal-ai/flux/dev", { prompt: "logged", sim_duration_ms: 2_000 })
      const handle = yield* started(provider, request)
      const seen: Array<ReadonlyArray<string>> = []
      for (let i = 0; i < 200; i++) {
        const status = yield* provider.poll(handle, request)
        if (status._tag !== "Running") break
        if (status.logs !== undefined) seen.push(status.logs)
        yield* Effect.sleep(25)
      }
      // Each answer holds every line so far: later ones extend earlier ones, and no percentage is made up.
      expect(seen.length).toBeGreaterThan(1)
      expect(seen[0]![0]).toBe("Loading model")
      expect(seen.at(-1)!.length).toBeGreaterThan(seen[0]!.length)
      for (const [i, lines] of seen.entries()) expect(lines.slice(0, seen[Math.max(0, i - 1)]!.length)).toEqual(seen[Math.max(0, i - 1)])
      expect(provider.logSecrets).toEqual([sim.apiKey])
    }))

  it.live("maps video, audio and text results, and streams a large video from its URL", () =>
    Effect.gen(function*() {
      expect(only(yield* run("fal-ai/some-video", { prompt: "v" }, "video"))).toMatchObject({ type: "video", contentType: "video/mp4" })
      expect(only(yield* run("fal-ai/stable-audio", { prompt: "a" }, "audio"))).toMatchObject({ type: "audio", contentType: "audio/wav" })
      const text = only(yield* run("fal-ai/any-llm", { prompt: "why?" }, "text"))
      expect(text.type).toBe("text")
      expect(yield* textOf(text.source)).toBe("Simulated answer to: why?")
      const large = only(yield* run("fal-ai/large-video", { prompt: "l" }, "video"))
      expect((yield* bytesOf(large.source)).bytes.length).toBe(2 * 1024 * 1024)
    }))

  it.live("reports a failed request with the model's error detail", () =>
    Effect.gen(function*() {
      expect(yield* run("fal-ai/flux/dev", { prompt: "p", sim_fail: "NSFW content detected" })).toEqual({
        _tag: "Failed",
        message: "body.prompt: NSFW content detected",
        // The facts the engine classifies the failure by (issue 38).
        httpStatus: 422,
        providerCode: "value_error"
      })
    }))

  it.live("cancels a queued request, which then ends as failed", () =>
    Effect.gen(function*() {
      const request = requestFor("fal-ai/flux/dev", { prompt: "p", sim_duration_ms: 60_000 })
      const handle = yield* started(provider, request)
      yield* provider.cancel(handle, request)
      expect(sim.counters.cancels).toBe(1)
      expect(yield* provider.poll(handle, request)).toEqual({
        _tag: "Failed",
        message: "The request was cancelled by the client",
        httpStatus: 499,
        providerCode: "client_cancelled"
      })
      // ALREADY_COMPLETED and unknown requests are no error.
      yield* provider.cancel(handle, request)
      yield* provider.cancel({ id: "unknown" }, request)
    }))

  it.live("sends the key only to the queue's host: URLs of another host in a handle are rebuilt", () =>
    Effect.gen(function*() {
      const request = requestFor("fal-ai/flux/dev", { prompt: "p" })
      const handle = yield* started(provider, request)
      const elsewhere = { id: handle.id, data: { statusUrl: "http://example.invalid/status", responseUrl: "http://example.invalid/r" } }
      expect((yield* pollUntilDone(provider, elsewhere, request))._tag).toBe("Succeeded")
    }))
})

describe("fal.ai: errors", () => {
  it.live("answers 429 with its Retry-After as retryable rejections, then queues once", () =>
    Effect.gen(function*() {
      sim.rateLimitNext(3, { retryAfterSeconds: 1, on: "start" })
      const request = requestFor("fal-ai/flux/dev", { prompt: "busy" })
      for (let i = 0; i < 3; i++) {
        expect(yield* Effect.flip(provider.start(request))).toMatchObject({
          _tag: "ProviderRejected",
          retryable: true,
          retryAfterMs: 1000,
          httpStatus: 429
        })
      }
      expect((yield* pollUntilDone(provider, yield* started(provider, request), request))._tag).toBe("Succeeded")
      expect(sim.counters.startsByMarker.get("busy")).toBe(1)
    }))

  it.live("refuses invalid input (422) and a bad key (401) for good, with the detail", () =>
    Effect.gen(function*() {
      sim.errorNext(1, 422, { body: { detail: [{ loc: ["body", "image_size"], msg: "unexpected value", type: "value_error" }] }, on: "start" })
      const invalid = yield* Effect.flip(provider.start(requestFor("fal-ai/flux/dev", { prompt: "p" })))
      expect(invalid).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 422 })
      expect(invalid.message).toContain("body.image_size: unexpected value")
      const wrongKey = falProvider({ apiKey: "wrong-key", baseUrl: sim.url })
      const unauthorized = yield* Effect.flip(wrongKey.start(requestFor("fal-ai/flux/dev", { prompt: "p" })))
      expect(unauthorized).toMatchObject({ retryable: false, httpStatus: 401 })
      expect(unauthorized.message).not.toContain("wrong-key")
      expect((yield* Effect.flip(provider.start(requestFor("../etc", { prompt: "p" })))).message).toContain("not a fal.ai model id")
      expect(sim.counters.starts).toBe(0)
    }))

  it.live("asks again when fetching a result meets a 5xx or 429, without failing the job", () =>
    Effect.gen(function*() {
      const request = requestFor("fal-ai/flux/dev", { prompt: "p" })
      const handle = yield* started(provider, request)
      yield* Effect.sleep(300)
      sim.errorNext(1, 503, { message: "Service unavailable", on: "result" })
      expect(yield* Effect.flip(provider.poll(handle, request))).toMatchObject({ retryable: true, httpStatus: 503 })
      sim.rateLimitNext(1, { retryAfterSeconds: 3, on: "result" })
      expect(yield* Effect.flip(provider.poll(handle, request))).toMatchObject({ retryable: true, retryAfterMs: 3000 })
      expect((yield* provider.poll(handle, request))._tag).toBe("Succeeded")
    }))

  it.live("answers ProviderUnreachable for a closed port, a slow answer and a malformed answer", () =>
    Effect.gen(function*() {
      const closed = falProvider({ apiKey: "k", baseUrl: `http://127.0.0.1:${yield* Effect.promise(closedPort)}` })
      const request = requestFor("fal-ai/flux/dev", { prompt: "p" })
      expect((yield* Effect.flip(closed.start(request)))._tag).toBe("ProviderUnreachable")
      expect((yield* Effect.flip(closed.poll({ id: "x" }, request)))._tag).toBe("ProviderUnreachable")
      const impatient = falProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 100 })
      sim.slowNext(1, 2_000, { on: "start" })
      expect((yield* Effect.flip(impatient.start(request)))._tag).toBe("ProviderUnreachable")
      sim.malformedNext(1, { on: "start" })
      expect((yield* Effect.flip(provider.start(request)))._tag).toBe("ProviderUnreachable")
      const handle = yield* started(provider, request)
      sim.malformedNext(1, { on: "poll" })
      expect((yield* Effect.flip(provider.poll(handle, request)))._tag).toBe("ProviderUnreachable")
    }))
})

describe("fal.ai: webhooks", () => {
  it.live("asks for a webhook and verifies the signed delivery, naming the request", () =>
    Effect.gen(function*() {
      const before = receiver.received.length
      const request = requestFor("fal-ai/flux/dev", { prompt: "hook" }, { callbackUrl: `${receiver.url}/v1/providers/fal/callbacks/job_1` })
      const handle = yield* started(provider, request)
      const callback = yield* Effect.promise(() => receiver.nth(before + 1))
      expect(yield* provider.verifyCallback!(callback)).toEqual({ handleId: handle.id })
      expect(JSON.parse(new TextDecoder().decode(callback.body))).toMatchObject({ request_id: handle.id, status: "OK" })
    }))

  it.live("refuses a tampered body, a stale timestamp, another key and missing headers", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ request_id: "r1", status: "OK", payload: {} })
      const bytes = (raw: string) => new TextEncoder().encode(raw)
      const good = signFalWebhook(body, sim.privateKey, "r1")
      expect(yield* provider.verifyCallback!({ headers: good, body: bytes(body) })).toEqual({ handleId: "r1" })
      const refused = (headers: Record<string, string>, raw = body) => Effect.flip(provider.verifyCallback!({ headers, body: bytes(raw) }))
      expect((yield* refused(good, body.replace("OK", "ERROR")))._tag).toBe("CallbackRejected")
      // The request id is signed: a delivery cannot be moved to another request.
      expect((yield* refused({ ...good, "x-fal-webhook-request-id": "r2" }))._tag).toBe("CallbackRejected")
      const stale = signFalWebhook(body, sim.privateKey, "r1", { timestampSeconds: Math.floor(Date.now() / 1000) - 301 })
      expect((yield* refused(stale)).message).toContain("5 minutes")
      const stranger = generateKeyPairSync("ed25519").privateKey
      expect((yield* refused(signFalWebhook(body, stranger, "r1"))).message).toContain("no configured key")
      expect((yield* refused({}))._tag).toBe("CallbackRejected")
      // The base64 form of the same key verifies too, and is equal to the JWKS form.
      const fromBase64 = falProvider({ apiKey: "k", baseUrl: sim.url, webhookPublicKeys: sim.publicKeyBase64 })
      expect(yield* fromBase64.verifyCallback!({ headers: good, body: bytes(body) })).toEqual({ handleId: "r1" })
    }))

  it.live("without public keys asks for no webhook and offers no verification", () =>
    Effect.gen(function*() {
      const pollingOnly = falProvider({ apiKey: sim.apiKey, baseUrl: sim.url })
      expect(pollingOnly.verifyCallback).toBeUndefined()
      const before = receiver.received.length
      const request = requestFor("fal-ai/flux/dev", { prompt: "p" }, { callbackUrl: `${receiver.url}/cb` })
      expect((yield* pollUntilDone(pollingOnly, yield* started(pollingOnly, request), request))._tag).toBe("Succeeded")
      yield* Effect.sleep(100)
      expect(receiver.received.length).toBe(before)
    }))

  it("refuses public keys that are no Ed25519 keys", () => {
    expect(() => parseFalPublicKeys("not-a-key")).toThrow(/Ed25519/)
    expect(() => parseFalPublicKeys(JSON.stringify({ keys: [{ kty: "RSA", n: "x", e: "AQAB" }] }))).toThrow(/Ed25519/)
    expect(parseFalPublicKeys(`${sim.publicKeyBase64}, ${sim.publicKeyBase64}`)).toHaveLength(2)
  })
})
