import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { webHandlerInScope } from "../../src/http/webHandler.js"
import { idleProvider as idle } from "../support/providers.js"
import { UploadSweeper } from "../../src/services/UploadSweeper.js"
import { memoryEngine } from "../support/engineLayer.js"


/**
 * The HTTP surface run on the test fiber's runtime, so TestClock drives every request's time:
 * the web handler of an embedding, with time under the test's control.
 */
const httpUnderTestClock = Effect.gen(function*() {
  const services = memoryEngine(idle).pipe(Layer.provideMerge(HttpConfig.layer({ adminToken: Redacted.make("admin") })))
  const context = yield* Layer.build(services)
  const handler = yield* Effect.provide(webHandlerInScope(), context)
  const call = (method: string, path: string, auth: string, body?: unknown, contentType = "application/json") =>
    Effect.promise(async () => {
      const raw = body instanceof Uint8Array ? body : JSON.stringify(body)
      const response = await handler(new Request(`http://engine.test${path}`, {
        method,
        headers: {
          authorization: `Bearer ${auth}`,
          ...(body === undefined ? {} : { "content-type": contentType, "content-length": String(raw.length) })
        },
        ...(body === undefined ? {} : { body: raw as BodyInit })
      }))
      const text = await response.text()
      const isJson = (response.headers.get("content-type") ?? "").includes("json")
      return { status: response.status, headers: response.headers, body: isJson && text !== "" ? JSON.parse(text) : text }
    })
  return { call, context }
})

describe("upload expiry through HTTP, on TestClock", () => {
  it.effect("closes the upload URL after 15 minutes and expires the upload after 60", () =>
    Effect.gen(function*() {
      const { call, context } = yield* httpUnderTestClock
      yield* call("PUT", "/admin/catalog", "admin", { categories: [], capabilities: [], providers: [], models: [] })
      const account = (yield* call("POST", "/admin/accounts", "admin", { name: "a" })).body
      const key = (yield* call("POST", `/admin/accounts/${account.id}/keys`, "admin", { name: "k" })).body.key
      const presigned = yield* call("POST", "/v1/uploads/presign", key, { filename: "a.png", contentType: "image/png" })
      expect(presigned.status).toBe(200)
      const { expiresAt, fileId, uploadUrl } = presigned.body.data
      expect(Date.parse(expiresAt)).toBe(60 * 60_000)
      const putPath = `${new URL(uploadUrl).pathname}${new URL(uploadUrl).search}`
      const filePath = `/files/${fileId}`
      expect((yield* call("GET", filePath, key)).status).toBe(404)
      yield* TestClock.adjust("14 minutes")
      expect((yield* call("PUT", putPath, key, new Uint8Array([1, 2]), "image/png")).status).toBe(200)
      // Cached no longer than the upload has left: 46 minutes.
      expect((yield* call("GET", filePath, key)).headers.get("cache-control")).toBe("public, max-age=2760")
      yield* TestClock.adjust("1 minute")
      const late = yield* call("PUT", putPath, key, new Uint8Array([1]), "image/png")
      expect({ status: late.status, code: late.body.error.code }).toEqual({ status: 403, code: "UPLOAD_URL_EXPIRED" })
      yield* TestClock.adjust("44 minutes")
      expect((yield* call("GET", `/v1/uploads/${fileId}`, key)).body.data.status).toBe("pending")
      expect((yield* call("GET", filePath, key)).status).toBe(200)
      yield* TestClock.adjust("1 minute")
      expect((yield* call("GET", `/v1/uploads/${fileId}`, key)).body.data.status).toBe("expired")
      // Gone with the upload, before the sweeper has deleted the file.
      expect((yield* call("GET", filePath, key)).status).toBe(404)
      const swept = yield* UploadSweeper.use((s) => s.sweepOnce).pipe(Effect.provide(context))
      expect(swept).toEqual({ verified: 0, rejected: 0, expired: 1 })
      expect((yield* call("GET", `/v1/uploads/${fileId}`, key)).body.data.status).toBe("expired")
    }))
})
