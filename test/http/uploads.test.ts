import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signUploadGrant } from "../../src/domain/upload.js"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
  expect(reply.body.success).toBe(false)
}

describe("uploads", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  /** A PUT to the upload URL, as a browser would send it (a web Request does not carry the length itself). */
  const put = (uploadUrl: string, body: Uint8Array, contentType: string, length: string | null = String(body.length)) =>
    engine.request("PUT", uploadUrl.replace(BASE, ""), {
      rawBody: body,
      headers: { "content-type": contentType, ...(length === null ? {} : { "content-length": length }) }
    })

  it("presigns with the spec's envelope and the type's size limit; any active key may", async () => {
    const acc = await engine.account({ scopes: ["list_models"] })
    const reply = await acc.post("/v1/uploads/presign", { filename: "cat.png", contentType: "image/png" })
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ success: true, requestId: reply.headers.get("x-request-id") })
    const { data } = reply.body
    expect(data).toMatchObject({ maxSize: 10 * 1024 * 1024, fileUrl: `${BASE}/files/${data.fileId}` })
    expect(data.uploadUrl).toMatch(new RegExp(`^${BASE}/uploads/${data.fileId}\\?`))
    expect(Date.parse(data.expiresAt) - Date.now()).toBeGreaterThan(59 * 60_000)
    const video = await acc.post("/v1/uploads/presign", { filename: "v.webm", contentType: "video/webm" })
    expect(video.body.data.maxSize).toBe(100 * 1024 * 1024)
    const audio = await acc.post("/v1/uploads/presign", { filename: "a.wav", contentType: "audio/wav" })
    expect(audio.body.data.maxSize).toBe(50 * 1024 * 1024)
    expectError(await engine.request("POST", "/v1/uploads/presign", { body: { filename: "x.png", contentType: "image/png" } }), 401, "UNAUTHORIZED")
  })

  it("refuses missing or malformed names and types, and other types", async () => {
    const acc = await engine.account()
    expectError(await acc.post("/v1/uploads/presign", { contentType: "image/png" }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/uploads/presign", { filename: "a/b.png", contentType: "image/png" }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/uploads/presign", { filename: "a.png" }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "not a type" }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/uploads/presign", { filename: "a.svg", contentType: "image/svg+xml" }), 400, "INVALID_CONTENT_TYPE")
  })

  it("takes one PUT with the declared type, serves the file, and shows the upload to its owner only", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "cat.png", contentType: "image/png" })).body
    const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3])
    expectError(await put(data.uploadUrl, bytes, "image/jpeg"), 400, "INVALID_CONTENT_TYPE")
    expect((await engine.request("GET", `/files/${data.fileId}`)).status).toBe(404)
    const stored = await put(data.uploadUrl, bytes, "image/png")
    expect(stored.status).toBe(200)
    const file = await engine.request("GET", `/files/${data.fileId}`)
    expect(file.headers.get("content-type")).toBe("image/png")
    const maxAge = Number(/max-age=(\d+)/.exec(file.headers.get("cache-control") ?? "")?.[1])
    expect(maxAge).toBeLessThanOrEqual(3600)
    expect(maxAge).toBeGreaterThan(3500)
    expectError(await put(data.uploadUrl, new Uint8Array([9]), "image/png"), 409, "UPLOAD_ALREADY_RECEIVED")
    const status = await acc.get(`/v1/uploads/${data.fileId}`)
    expect(status.body).toMatchObject({
      success: true,
      data: { id: data.fileId, filename: "cat.png", contentType: "image/png", fileUrl: data.fileUrl, status: "pending", expiresAt: data.expiresAt }
    })
    expectError(await (await engine.account()).get(`/v1/uploads/${data.fileId}`), 404, "NOT_FOUND")
    expectError(await acc.get("/v1/uploads/upl_missing"), 404, "NOT_FOUND")
  })

  it("refuses tampered, expired and oversize uploads and stores nothing", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "a.gif", contentType: "image/gif" })).body
    const url = new URL(data.uploadUrl)
    const tampered = new URL(url)
    tampered.searchParams.set("max", String(100 * 1024 * 1024))
    expectError(await put(tampered.toString(), new Uint8Array([1]), "image/gif"), 403, "UPLOAD_URL_INVALID")
    const expired = new URL(url)
    const grant = { uploadId: data.fileId, contentType: "image/gif", maxSize: data.maxSize, size: null, expiresAt: Date.now() - 1 }
    expired.searchParams.set("expires", String(grant.expiresAt))
    expired.searchParams.set("sig", signUploadGrant("test-upload-secret", grant))
    expectError(await put(expired.toString(), new Uint8Array([1]), "image/gif"), 403, "UPLOAD_URL_EXPIRED")
    expectError(await put(data.uploadUrl, new Uint8Array(data.maxSize + 1), "image/gif"), 413, "FILE_TOO_LARGE")
    expect((await engine.request("GET", `/files/${data.fileId}`)).status).toBe(404)
    expect((await put(data.uploadUrl, new Uint8Array(data.maxSize), "image/gif")).status).toBe(200)
  })

  it("wants a Content-Length that matches the body, and a refused body leaves the URL usable", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png" })).body
    expectError(await put(data.uploadUrl, new Uint8Array(3), "image/png", null), 411, "LENGTH_REQUIRED")
    expectError(await put(data.uploadUrl, new Uint8Array(3), "image/png", "abc"), 411, "LENGTH_REQUIRED")
    expectError(await put(data.uploadUrl, new Uint8Array(3), "image/png", "2"), 400, "VALIDATION_ERROR")
    expectError(await put(data.uploadUrl, new Uint8Array(3), "image/png", "4"), 400, "VALIDATION_ERROR")
    expectError(await put(data.uploadUrl, new Uint8Array(3), "image/png", String(data.maxSize + 1)), 413, "FILE_TOO_LARGE")
    expect((await engine.request("GET", `/files/${data.fileId}`)).status).toBe(404)
    expect((await put(data.uploadUrl, new Uint8Array([5, 6, 7]), "image/png")).body.data).toEqual({ id: data.fileId, size: 3 })
    expect((await engine.request("GET", `/files/${data.fileId}`)).body).toBe("\u0005\u0006\u0007")
  })

  it("binds a size declared at presign: over the limit is refused at once, and the PUT must match it", async () => {
    const acc = await engine.account()
    const tooBig = await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png", size: 10 * 1024 * 1024 + 1 })
    expectError(tooBig, 413, "FILE_TOO_LARGE")
    expect(tooBig.body.error.details).toMatchObject({ maxSize: 10 * 1024 * 1024 })
    expectError(await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png", size: "3" }), 400, "VALIDATION_ERROR")
    expectError(await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png", size: 0 }), 400, "VALIDATION_ERROR")
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png", size: 3 })).body
    expect(data.maxSize).toBe(10 * 1024 * 1024)
    const widened = new URL(data.uploadUrl)
    widened.searchParams.set("size", "4")
    expectError(await put(widened.toString(), new Uint8Array(4), "image/png"), 403, "UPLOAD_URL_INVALID")
    const unbound = new URL(data.uploadUrl)
    unbound.searchParams.delete("size")
    expectError(await put(unbound.toString(), new Uint8Array(4), "image/png"), 403, "UPLOAD_URL_INVALID")
    expectError(await put(data.uploadUrl, new Uint8Array(4), "image/png"), 400, "VALIDATION_ERROR")
    expectError(await put(data.uploadUrl, new Uint8Array(2), "image/png"), 400, "VALIDATION_ERROR")
    expect((await engine.request("GET", `/files/${data.fileId}`)).status).toBe(404)
    expect((await put(data.uploadUrl, new Uint8Array([7, 8, 9]), "image/png")).status).toBe(200)
    expect((await engine.request("GET", `/files/${data.fileId}`)).body).toBe("\u0007\u0008\u0009")
  })

  it("lets a browser on any origin PUT to the upload URL and read the file (CORS), errors included", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "a.png", contentType: "image/png" })).body
    const path = data.uploadUrl.replace(BASE, "")
    const preflight = await engine.request("OPTIONS", path, {
      headers: { origin: "https://app.example", "access-control-request-method": "PUT", "access-control-request-headers": "content-type" }
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
    expect(preflight.headers.get("access-control-allow-methods")).toBe("PUT")
    expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type")
    const refused = await put(data.uploadUrl, new Uint8Array([1]), "image/gif")
    expectError(refused, 400, "INVALID_CONTENT_TYPE")
    expect(refused.headers.get("access-control-allow-origin")).toBe("*")
    expect(refused.headers.get("x-request-id")).toBe(refused.body.requestId)
    const stored = await put(data.uploadUrl, new Uint8Array([1]), "image/png")
    expect(stored.status).toBe(200)
    expect(stored.headers.get("access-control-allow-origin")).toBe("*")
    expect(stored.headers.get("access-control-expose-headers")).toBe("x-request-id")
    const file = await engine.request("GET", `/files/${data.fileId}`)
    expect(file.headers.get("access-control-allow-origin")).toBe("*")
    expect((await engine.request("GET", "/files/missing")).headers.get("access-control-allow-origin")).toBe("*")
    // The API itself is for servers holding keys: it does not invite browsers in.
    expect((await acc.get(`/v1/uploads/${data.fileId}`)).headers.get("access-control-allow-origin")).toBeNull()
  })

  it("serves a file in byte ranges, as video players ask", async () => {
    const acc = await engine.account()
    const { data } = (await acc.post("/v1/uploads/presign", { filename: "v.mp4", contentType: "video/mp4" })).body
    const bytes = new Uint8Array(1000).map((_, i) => i % 251)
    expect((await put(data.uploadUrl, bytes, "video/mp4")).status).toBe(200)
    const path = `/files/${data.fileId}`
    const whole = await engine.request("GET", path)
    expect(whole.status).toBe(200)
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    expect(whole.headers.get("content-length")).toBe("1000")
    const fetchPart = (range: string) => engine.handler(new Request(`${BASE}${path}`, { headers: { range } }))
    const part = await fetchPart("bytes=100-199")
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe("bytes 100-199/1000")
    expect(part.headers.get("content-length")).toBe("100")
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(100, 200))
    const tail = await fetchPart("bytes=-10")
    expect(tail.headers.get("content-range")).toBe("bytes 990-999/1000")
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(bytes.subarray(990))
    const past = await fetchPart("bytes=1000-")
    expect(past.status).toBe(416)
    expect(past.headers.get("content-range")).toBe("bytes */1000")
    expect((await fetchPart("bytes=0-1,5-6")).status).toBe(200)
  })
})
