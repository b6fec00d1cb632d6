import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { connect, type AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EngineHttpLive } from "../../src/http/layer.js"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"
// Short, so each refusal comes in well under a second; the defaults (30 s) are checked in config.test.
const BODY_TIMEOUT_MS = 400
const UPLOAD_IDLE_MS = 400
// What the answer may take beyond its timeout on a busy 2-core machine.
const MARGIN_MS = 2_000

const encoder = new TextEncoder()
const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A body that sends `first`, then `each` every `everyMs` until `count` chunks have gone (forever when undefined), then ends. */
const pacedBody = (first: string, each: Uint8Array, everyMs: number, count?: number) => {
  let sent = 0
  return new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(encoder.encode(first)),
    pull: async (controller) => {
      if (count !== undefined && sent >= count) return controller.close()
      await later(everyMs)
      sent++
      controller.enqueue(each)
    }
  })
}

/** A body that sends `first` and then nothing more, never ending. */
const stalledBody = (first: string) =>
  new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(encoder.encode(first)),
    pull: () => new Promise(() => {})
  })

describe("request timeouts", () => {
  let engine: HttpEngine
  let key: string
  beforeAll(async () => {
    engine = await makeHttpEngine({}, { http: { bodyTimeoutMs: BODY_TIMEOUT_MS, uploadIdleTimeoutMs: UPLOAD_IDLE_MS } })
    key = (await engine.account()).key
  })
  afterAll(() => engine.dispose())

  const send = async (method: string, path: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) => {
    const started = Date.now()
    const response = await engine.handler(
      new Request(`${BASE}${path}`, {
        method,
        body,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        duplex: "half"
      } as RequestInit)
    )
    return { status: response.status, headers: response.headers, body: await response.json() as any, ms: Date.now() - started }
  }

  it("answers 408 REQUEST_TIMEOUT when the body stops arriving, and closes the connection", async () => {
    const reply = await send("POST", "/v1/jobs/submit", stalledBody(`{"model":"${IMAGE}",`))
    expect([reply.status, reply.body.error.code]).toEqual([408, "REQUEST_TIMEOUT"])
    expect(reply.body.error.details).toEqual({ timeoutMs: BODY_TIMEOUT_MS })
    expect(reply.headers.get("connection")).toBe("close")
    expect(reply.ms).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 50)
    expect(reply.ms).toBeLessThan(BODY_TIMEOUT_MS + MARGIN_MS)
    // Nothing was submitted.
    const jobs = await engine.withKey(key).get("/v1/jobs")
    expect(jobs.body.jobs).toEqual([])
  })

  it("bounds a body's total time: a client trickling a byte every 50 ms is answered 408 too", async () => {
    const reply = await send("POST", "/v1/jobs/estimate", pacedBody(`{"model":"${IMAGE}"`, encoder.encode(" "), 50))
    expect([reply.status, reply.body.error.code]).toEqual([408, "REQUEST_TIMEOUT"])
    expect(reply.ms).toBeLessThan(BODY_TIMEOUT_MS + MARGIN_MS)
  })

  it("takes a body that arrives within the bound", async () => {
    const reply = await send("POST", "/v1/jobs/estimate", pacedBody(`{"model":"${IMAGE}"`, encoder.encode(" }"), 50, 1))
    expect(reply.status).toBe(200)
  })

  const presign = async () => {
    const { data } = (await engine.withKey(key).post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png" })).body
    return (data.uploadUrl as string).replace(BASE, "")
  }

  it("does not cut an upload that keeps sending, though it takes several times the body timeout", async () => {
    const chunk = new Uint8Array(1_024).fill(7)
    const chunks = 12 // one every 150 ms: about 1.8 s in all, over four times BODY_TIMEOUT_MS
    const reply = await send("PUT", await presign(), pacedBody("", chunk, 150, chunks), {
      "content-type": "image/png",
      "content-length": String(chunks * 1_024)
    })
    expect(reply.status).toBe(200)
    expect(reply.body.data.size).toBe(chunks * 1_024)
    expect(reply.ms).toBeGreaterThan(4 * BODY_TIMEOUT_MS)
  })

  it("answers 408 to an upload that sent nothing for the idle timeout", async () => {
    const path = await presign()
    const reply = await send("PUT", path, stalledBody("x".repeat(100)), { "content-type": "image/png", "content-length": "1000" })
    expect([reply.status, reply.body.error.code]).toEqual([408, "REQUEST_TIMEOUT"])
    expect(reply.ms).toBeLessThan(UPLOAD_IDLE_MS + MARGIN_MS)
  })
})

/**
 * Over a real socket, through @effect/platform-node's server as the bundled server runs: the
 * client that sent its headers and part of its body gets its 408, and the server closes the
 * socket instead of holding it (Node's own bound was 300 s).
 */
describe("request timeouts over node:http", () => {
  let engine: HttpEngine
  let key: string
  let port: number
  let server: ManagedRuntime.ManagedRuntime<HttpServer.HttpServer, unknown>
  beforeAll(async () => {
    engine = await makeHttpEngine({}, { http: { bodyTimeoutMs: BODY_TIMEOUT_MS } })
    key = (await engine.account()).key
    const context = await engine.runtime.runPromise(Effect.context<any>())
    // The engine logs its requests itself, as the bundled server has it.
    const served = HttpRouter.serve(EngineHttpLive.pipe(Layer.provide(Layer.succeedContext(context))), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
    )
    server = ManagedRuntime.make(served)
    const address = await server.runPromise(HttpServer.HttpServer.useSync((s) => s.address))
    port = (address as unknown as AddressInfo).port
  })
  afterAll(async () => {
    await server?.dispose()
    await engine?.dispose()
  })

  it("answers 408 to a body that stopped, then closes the socket", async () => {
    const started = Date.now()
    const socket = connect(port, "127.0.0.1")
    let answer = ""
    const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now() - started)))
    socket.on("data", (chunk) => (answer += chunk.toString()))
    socket.write(
      `POST /v1/jobs/submit HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n` +
        `content-length: 1000\r\n\r\n{"model":"${IMAGE}",`
    )
    const closedAfter = await closed
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(answer).toContain("REQUEST_TIMEOUT")
    expect(closedAfter).toBeLessThan(BODY_TIMEOUT_MS + MARGIN_MS)
  })
})
