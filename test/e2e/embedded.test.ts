import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeEmbeddedEngine } from "../../examples/embedded.js"
import { demoCatalog } from "../support/demoCatalog.js"

const BASE = "http://embedded.test/api/genjobs"

describe("the embedding example (docs/embedding.md), mounted under /api/genjobs", () => {
  let engine: Awaited<ReturnType<typeof makeEmbeddedEngine>>
  beforeAll(async () => {
    engine = await makeEmbeddedEngine({
      dataDir: mkdtempSync(join(tmpdir(), "genjobs-embedded-")),
      publicUrl: BASE,
      basePath: "/api/genjobs",
      adminToken: "admin-secret",
      uploadSecret: "upload-secret"
    })
  })
  afterAll(() => engine.dispose())

  const call = async (method: string, path: string, auth: string, body?: unknown) => {
    const response = await engine.fetch(new Request(`${BASE}${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))
    return { status: response.status, body: await response.json() as any }
  }

  it("runs a job to completion and takes an upload, through the web handler", async () => {
    expect((await call("PUT", "/admin/catalog", "admin-secret", demoCatalog())).status).toBe(200)
    const account = (await call("POST", "/admin/accounts", "admin-secret", { name: "a", creditsMicroCents: 1_000_000 })).body
    const { key } = (await call("POST", `/admin/accounts/${account.id}/keys`, "admin-secret", { name: "k" })).body
    const submitted = await call("POST", "/v1/jobs/submit", key, { model: "demo/text-gen/text-to-text", input: { prompt: "embedded" } })
    expect(submitted.status).toBe(200)
    let job: any
    for (let i = 0; i < 200; i++) {
      job = (await call("GET", `/v1/jobs/${submitted.body.jobId}`, key)).body
      if (job.status === "completed") break
      await new Promise((r) => setTimeout(r, 25))
    }
    expect(job.status).toBe("completed")
    expect(job.output.startsWith(`${BASE}/files/`)).toBe(true)

    const { data } = (await call("POST", "/v1/uploads/presign", key, { filename: "a.png", contentType: "image/png", size: 3 })).body
    const put = await engine.fetch(new Request(data.uploadUrl, {
      method: "PUT",
      body: new Uint8Array([1, 2, 3]),
      headers: { "content-type": "image/png", "content-length": "3" }
    }))
    expect(put.status).toBe(200)
    const file = await engine.fetch(new Request(data.fileUrl))
    expect([...new Uint8Array(await file.arrayBuffer())]).toEqual([1, 2, 3])
  })
})
