import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"
// Above the demo catalog (about 11 KB), which the test engine loads through the admin API.
const CAP = 16_384

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

/** A body of endless 1 KiB chunks with no length, counting what the engine pulled. */
const endlessBody = () => {
  const pulled = { bytes: 0 }
  const stream = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      pulled.bytes += 1_024
      controller.enqueue(new TextEncoder().encode(" ".repeat(1_024)))
    }
  })
  return { pulled, stream }
}

/** `depth` arrays nested in each other. */
const nested = (depth: number): unknown => {
  let value: unknown = "x"
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

describe("request limits", () => {
  let engine: HttpEngine
  let key: string
  beforeAll(async () => {
    engine = await makeHttpEngine({}, { http: { maxJsonBodyBytes: CAP } })
    key = (await engine.account()).key
  })
  afterAll(() => engine.dispose())

  const post = async (path: string, init: { body: BodyInit; headers?: Record<string, string> }) => {
    const response = await engine.handler(
      new Request(`${BASE}${path}`, {
        method: "POST",
        body: init.body,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
        duplex: "half"
      } as RequestInit)
    )
    return { status: response.status, headers: response.headers, body: await response.json() as any }
  }

  it("answers 413 PAYLOAD_TOO_LARGE on a Content-Length over the cap, reading nothing", async () => {
    const { pulled, stream } = endlessBody()
    const reply = await post("/v1/jobs/submit", { body: stream, headers: { "content-length": String(CAP + 1) } })
    expectError(reply, 413, "PAYLOAD_TOO_LARGE")
    expect(reply.body.error.details).toEqual({ maxBytes: CAP })
    expect(pulled.bytes).toBeLessThanOrEqual(2 * 1_024) // what the stream queues up front, unread
  })

  it("stops reading a body without a length at the cap", async () => {
    const { pulled, stream } = endlessBody()
    expectError(await post("/v1/jobs/submit", { body: stream }), 413, "PAYLOAD_TOO_LARGE")
    expect(pulled.bytes).toBeLessThanOrEqual(CAP + 2 * 1_024)
  })

  it("takes a body of exactly the cap", async () => {
    const body = JSON.stringify({ model: IMAGE, input: { prompt: "x" } })
    const padded = body.padEnd(CAP, " ")
    expect((await post("/v1/jobs/submit", { body: padded })).status).toBe(200)
    expectError(await post("/v1/jobs/submit", { body: `${padded} ` }), 413, "PAYLOAD_TOO_LARGE")
  })

  it("caps the admin API too", async () => {
    const reply = await engine.admin("POST", "/admin/accounts", { name: "n", segments: ["s".repeat(CAP)] })
    expectError(reply, 413, "PAYLOAD_TOO_LARGE")
  })

  it("does not cap upload PUTs, which have their own limits", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "big.png", contentType: "image/png" })).body
    const bytes = new Uint8Array(CAP * 4).fill(7)
    const reply = await engine.request("PUT", data.uploadUrl.replace(BASE, ""), {
      rawBody: bytes,
      headers: { "content-type": "image/png", "content-length": String(bytes.length) }
    })
    expect(reply.status).toBe(200)
    expect(reply.body.data.size).toBe(CAP * 4)
  })

  it("answers 400 VALIDATION_ERROR for JSON nested deeper than 64 levels, not 500", async () => {
    // The body object is depth 1, so 63 arrays inside it make 64 levels: past the depth check, the
    // body is decoded, which names the field as unknown.
    const atLimit = await post("/v1/jobs/estimate", { body: JSON.stringify({ model: IMAGE, extra: nested(63) }) })
    expectError(atLimit, 400, "VALIDATION_ERROR")
    expect(atLimit.body.error.details.unknown).toEqual(["extra"])
    const over = await post("/v1/jobs/estimate", { body: JSON.stringify({ model: IMAGE, extra: nested(64) }) })
    expectError(over, 400, "VALIDATION_ERROR")
    expect(over.body.error.message).toContain("nests too deeply")
    const probe = "[".repeat(5_000) + "]".repeat(5_000)
    expectError(await post("/v1/jobs/submit", { body: probe }), 400, "VALIDATION_ERROR")
  })

  it("answers 400 VALIDATION_ERROR for a JSON body that is not UTF-8, submitting nothing", async () => {
    const before = await engine.handler(new Request(`${BASE}/v1/jobs`, { headers: { authorization: `Bearer ${key}` } })).then((r) => r.json() as any)
    // "prompt": "caf\xe9": Latin-1 bytes, which a lenient decoder would store as U+FFFD.
    const latin1 = Uint8Array.from([...new TextEncoder().encode(`{"model":"${IMAGE}","input":{"prompt":"caf`), 0xe9, ...new TextEncoder().encode(`"}}`)])
    const refused = await post("/v1/jobs/submit", { body: latin1 })
    expectError(refused, 400, "VALIDATION_ERROR")
    expect(refused.body.error.message).toBe("The request body is not valid UTF-8")
    const after = await engine.handler(new Request(`${BASE}/v1/jobs`, { headers: { authorization: `Bearer ${key}` } })).then((r) => r.json() as any)
    expect(before.jobs).toBeInstanceOf(Array)
    expect(after.jobs).toEqual(before.jobs)
    // The same text in UTF-8 is taken.
    const utf8 = await post("/v1/jobs/submit", { body: JSON.stringify({ model: IMAGE, input: { prompt: "café" } }) })
    expect(utf8.status).toBe(200)
  })
})

describe("request limits: the default cap", () => {
  it("is 1 MiB", async () => {
    const engine = await makeHttpEngine()
    try {
      const { key } = await engine.account()
      const send = (bytes: number) =>
        engine.request("POST", "/v1/jobs/submit", {
          rawBody: JSON.stringify({ model: IMAGE, input: { prompt: "x" } }).padEnd(bytes, " "),
          headers: { authorization: `Bearer ${key}` }
        })
      expect((await send(1_048_576)).status).toBe(200)
      expectError(await send(1_048_577), 413, "PAYLOAD_TOO_LARGE")
    } finally {
      await engine.dispose()
    }
  })
})
