import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { webHandlerInScope } from "../../src/http/webHandler.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { memoryEngine } from "../support/engineLayer.js"

const idle: GenerationProvider = {
  start: () => Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } }),
  poll: () => Effect.never,
  cancel: () => Effect.void
}

/** The HTTP surface on the test fiber's runtime, so TestClock drives the heartbeat timer. */
const httpUnderTestClock = Effect.gen(function*() {
  const services = memoryEngine(idle).pipe(Layer.provideMerge(HttpConfig.layer({ adminToken: Redacted.make("admin") })))
  const handler = yield* Effect.provide(webHandlerInScope(), yield* Layer.build(services))
  const request = (method: string, path: string, auth: string, body?: unknown) =>
    Effect.promise(() =>
      handler(new Request(`http://engine.test${path}`, {
        method,
        headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }))
    )
  const call = (method: string, path: string, auth: string, body?: unknown) =>
    Effect.flatMap(request(method, path, auth, body), (response) => Effect.promise(() => response.json() as Promise<any>))
  return { call, request }
})

/** Reads a stream's text up to and including the next blank line (one event or one comment). */
const reading = (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  const next = Effect.promise(async () => {
    while (!buffer.includes("\n\n")) {
      const { done, value } = await reader.read()
      if (done) return undefined
      buffer += decoder.decode(value, { stream: true })
    }
    const end = buffer.indexOf("\n\n") + 2
    const block = buffer.slice(0, end)
    buffer = buffer.slice(end)
    return block
  })
  return { next, cancel: Effect.promise(() => reader.cancel()) }
}

describe("the status stream's heartbeat, on TestClock", () => {
  it.effect("writes a comment every 15 seconds of silence and none between", () =>
    Effect.gen(function*() {
      const { call, request } = yield* httpUnderTestClock
      yield* call("PUT", "/admin/catalog", "admin", demoCatalog())
      const account = yield* call("POST", "/admin/accounts", "admin", { name: "a", creditsMicroCents: 10_000_000 })
      const { key } = yield* call("POST", `/admin/accounts/${account.id}/keys`, "admin", { name: "k" })
      const { jobId } = yield* call("POST", "/v1/jobs/submit", key, { model: "demo/text-gen/text-to-text", input: { prompt: "x" } })
      const stream = reading((yield* request("GET", `/v1/jobs/${jobId}/events`, key)).body!)
      expect(yield* stream.next).toBe(": open\n\n")
      expect(yield* stream.next).toMatch(/^id: 1\n/)
      // The pending job's place in the queue, right after its status.
      expect(yield* stream.next).toMatch(/^event: queue\ndata: \{"position":1,/)

      yield* TestClock.adjust("15 seconds")
      expect(yield* stream.next).toBe(": heartbeat\n\n")
      // 14 seconds later the next thing written is the status change, not a heartbeat.
      yield* TestClock.adjust("14 seconds")
      yield* call("POST", `/v1/jobs/${jobId}/cancel`, key)
      expect(yield* stream.next).toMatch(/^id: 3\n/)
      expect(yield* stream.next).toBeUndefined()
    }))
})
