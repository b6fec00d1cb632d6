import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startS3 } from "../support/s3.js"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/

describe("the bundled server with BLOB_DRIVER=s3", () => {
  let s3: Awaited<ReturnType<typeof startS3>>
  let server: RunningServer
  let key: string
  beforeAll(async () => {
    s3 = await startS3()
    const { bucket } = await s3.bucket()
    server = await startServer({
      DATA_DIR: tempDataDir(),
      BLOB_DRIVER: "s3",
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
      S3_FORCE_PATH_STYLE: "true"
    })
    key = KEY_PATTERN.exec(server.output)![0]
  })
  afterAll(async () => {
    await server.stop("SIGKILL")
    await s3.close()
  })

  const call = (path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }).then((r) => r.json())

  it("stores job outputs in the bucket", async () => {
    const { jobId } = await call("/v1/jobs/submit", { model: "demo/text-gen/text-to-text", input: { prompt: "to the bucket" } })
    let job: any
    const deadline = Date.now() + 20_000
    do {
      job = await call(`/v1/jobs/${jobId}`)
      if (job.status === "completed") break
      await new Promise((r) => setTimeout(r, 100))
    } while (Date.now() < deadline)
    expect(job.output.startsWith(s3.endpoint)).toBe(true)
    expect(await (await fetch(job.output)).text()).toContain("to the bucket")
  })

  it("hands out presigned S3 PUT URLs whose files are then served from the bucket", async () => {
    const { data } = await call("/v1/uploads/presign", { filename: "a.wav", contentType: "audio/wav" })
    expect(data.uploadUrl.startsWith(s3.endpoint)).toBe(true)
    const put = await fetch(data.uploadUrl, { method: "PUT", body: new Uint8Array([82, 73, 70, 70]), headers: { "content-type": "audio/wav" } })
    expect(put.status).toBe(200)
    const file = await fetch(data.fileUrl)
    expect(file.headers.get("content-type")).toBe("audio/wav")
    expect([...new Uint8Array(await file.arrayBuffer())]).toEqual([82, 73, 70, 70])
  })

  it("binds a declared size into the presigned URL: S3 refuses another length", async () => {
    const { data } = await call("/v1/uploads/presign", { filename: "a.wav", contentType: "audio/wav", size: 4 })
    const send = (bytes: number) =>
      fetch(data.uploadUrl, { method: "PUT", body: new Uint8Array(bytes), headers: { "content-type": "audio/wav" } }).then((r) => r.status)
    expect(await send(5)).toBe(403)
    expect((await fetch(data.fileUrl)).status).toBe(404)
    expect(await send(4)).toBe(200)
  })
})
