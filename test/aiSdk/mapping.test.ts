import { APICallError, InvalidArgumentError } from "@ai-sdk/provider"
import { describe, expect, it } from "vitest"
import { imageCallOptions, speechCallOptions, videoCallOptions } from "../../adapters/providers/aiSdk/callOptions.js"
import { providerErrorOf } from "../../adapters/providers/aiSdk/errors.js"
import { sniffContentType } from "../../adapters/providers/aiSdk/outputs.js"
import { withCall } from "../../entries/aiSdk/callKey.js"

const NOW = Date.UTC(2026, 0, 1)
const apiError = (statusCode: number | undefined, headers: Record<string, string> = {}, cause?: unknown) =>
  new APICallError({
    message: `status ${statusCode}`,
    url: "https://api.provider.test/v1/x",
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode }),
    responseHeaders: headers,
    cause
  })

describe("AI SDK errors as the engine's provider errors", () => {
  it("a 429 with Retry-After is a retryable refusal after that long", () => {
    expect(providerErrorOf("p", apiError(429, { "Retry-After": "7" }), { isStart: true, nowMs: NOW }))
      .toMatchObject({ _tag: "ProviderRejected", retryable: true, httpStatus: 429, retryAfterMs: 7_000 })
    expect(providerErrorOf("p", apiError(503, { "retry-after-ms": "250" }), { isStart: false, nowMs: NOW }))
      .toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 250 })
  })

  it("a 400 is final; a 502 to a start may have started (unknown), to a poll it is a retryable refusal", () => {
    expect(providerErrorOf("p", apiError(400), { isStart: true, nowMs: NOW })).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 400 })
    expect(providerErrorOf("p", apiError(502), { isStart: true, nowMs: NOW })).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
    expect(providerErrorOf("p", apiError(502), { isStart: false, nowMs: NOW })).toMatchObject({ _tag: "ProviderRejected", retryable: true })
  })

  it("no answer is ProviderUnreachable, notSent only when the connection was refused", () => {
    const refused = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) })
    const reset = new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) })
    expect(providerErrorOf("p", apiError(undefined, {}, refused), { isStart: true, nowMs: NOW })).toMatchObject({ _tag: "ProviderUnreachable", notSent: true })
    expect(providerErrorOf("p", apiError(undefined, {}, reset), { isStart: true, nowMs: NOW })).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
  })

  it("an argument error is final (nothing was sent); an unreadable answer is an unknown outcome", () => {
    expect(providerErrorOf("p", new InvalidArgumentError({ argument: "size", message: "bad size" }), { isStart: true, nowMs: NOW }))
      .toMatchObject({ _tag: "ProviderRejected", retryable: false })
    expect(providerErrorOf("p", new Error("Unexpected token"), { isStart: true, nowMs: NOW })).toMatchObject({ _tag: "ProviderUnreachable", notSent: false })
  })
})

describe("a job's input as AI SDK call options", () => {
  it("named options are read from the input, the rest goes to the package's providerOptions", () => {
    const options = imageCallOptions({ prompt: "fox", size: "64x64", seed: 3, imageUrl: "https://x/a.png", guidance: 7 }, "replicate", { "idempotency-key": "k" })
    expect(options).toMatchObject({
      prompt: "fox",
      n: 1,
      size: "64x64",
      seed: 3,
      files: [{ type: "url", url: "https://x/a.png" }],
      providerOptions: { replicate: { guidance: 7 } },
      headers: { "idempotency-key": "k" }
    })
    expect(videoCallOptions({ prompt: "w", duration: 5, providerOptions: { fal: { loop: true } } }, "fal", {}).providerOptions).toEqual({ fal: { loop: true } })
    expect(speechCallOptions({ prompt: "hello", voice: "alloy" }, "openai", {})).toMatchObject({ text: "hello", voice: "alloy" })
  })

  it("bytes are typed by their signature", () => {
    expect(sniffContentType(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0]), "x")).toBe("image/png")
    expect(sniffContentType(new TextEncoder().encode("RIFF1234WAVEfmt"), "x")).toBe("audio/wav")
    expect(sniffContentType(new TextEncoder().encode("RIFF1234WEBPVP8"), "x")).toBe("image/webp")
    expect(sniffContentType(new Uint8Array([1, 2, 3]), "audio/mpeg")).toBe("audio/mpeg")
  })
})

describe("the Idempotency-Key of an AI SDK call", () => {
  const keyOf = (headers: Record<string, string> | undefined, input: unknown = { prompt: "p" }) =>
    withCall(headers, ({ keyFor }) => keyFor("m", input))

  it("a retry (the same headers object, after the attempt settled) gets the same key; another call another", async () => {
    const call = { "user-agent": "ai/7" }
    expect(await keyOf(call)).toBe(await keyOf(call))
    expect(await keyOf({ "user-agent": "ai/7" })).not.toBe(await keyOf(call))
  })

  it("parallel calls of one user call (in flight together) get different keys", async () => {
    const call = { "user-agent": "ai/7" }
    const keys: Array<string> = []
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const both = Promise.all([0, 1].map(() => withCall(call, async ({ keyFor }) => {
      keys.push(await keyFor("m", { prompt: "p" }))
      await held
    })))
    await new Promise((resolve) => setTimeout(resolve, 0))
    release()
    await both
    expect(new Set(keys).size).toBe(2)
  })

  it("an Idempotency-Key header names the call; the key still differs per model and input", async () => {
    const a = await keyOf({ "Idempotency-Key": "user-1" })
    expect(await keyOf({ "idempotency-key": "user-1" })).toBe(a)
    expect(await keyOf({ "idempotency-key": "user-1" }, { prompt: "other" })).not.toBe(a)
  })
})
