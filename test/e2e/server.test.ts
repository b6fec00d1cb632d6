import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const ADMIN = "e2e-admin-token"
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/

const call = async (server: RunningServer, method: string, path: string, key?: string, body?: unknown) => {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const type = response.headers.get("content-type") ?? ""
  return { status: response.status, headers: response.headers, body: type.includes("json") ? await response.json() : new Uint8Array(await response.arrayBuffer()) }
}

const waitFor = async (server: RunningServer, key: string, jobId: string, statuses: Array<string>, withinMs = 20_000) => {
  const deadline = Date.now() + withinMs
  while (Date.now() < deadline) {
    const job = await call(server, "GET", `/v1/jobs/${jobId}`, key)
    if (statuses.includes(job.body.status)) return job.body
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`job ${jobId} never reached ${statuses.join("/")}`)
}

describe("the bundled server on its embedded defaults", () => {
  const dataDir = tempDataDir()
  let server: RunningServer
  let key: string
  beforeAll(async () => {
    server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, WORKER_CONCURRENCY: "1", JOB_LEASE_MS: "2000" })
    key = KEY_PATTERN.exec(server.output)![0]
  })
  afterAll(async () => {
    await server.stop("SIGKILL")
  })

  it("prints a working demo key and runs a job to a downloadable PNG", async () => {
    const submitted = await call(server, "POST", "/v1/jobs/submit", key, {
      model: "demo/image-gen/text-to-image",
      input: { prompt: "a lighthouse", width: 32, height: 32 }
    })
    expect(submitted.status).toBe(200)
    const job = await waitFor(server, key, submitted.body.jobId, ["completed", "failed"])
    expect(job.status).toBe("completed")
    expect(job.output.startsWith(`${server.url}/files/`)).toBe(true)
    const file = await fetch(job.output)
    expect(file.headers.get("content-type")).toBe("image/png")
    expect([...new Uint8Array(await file.arrayBuffer()).slice(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10])
  })

  it("uploads a picture and remixes it with the image-to-image model; foreign URLs are refused", async () => {
    const remix = async (bytes: Uint8Array<ArrayBuffer>) => {
      const { data } = (await call(server, "POST", "/v1/uploads/presign", key, { filename: "in.png", contentType: "image/png" })).body
      const put = await fetch(data.uploadUrl, { method: "PUT", body: bytes, headers: { "content-type": "image/png" } })
      expect(put.status).toBe(200)
      const job = await call(server, "POST", "/v1/jobs/submit", key, {
        model: "demo/image-gen/image-to-image",
        input: { prompt: "remix", imageUrl: data.fileUrl, width: 16, height: 16 }
      })
      return waitFor(server, key, job.body.jobId, ["completed", "failed"])
    }
    const first = await remix(new Uint8Array([1, 2, 3]))
    const second = await remix(new Uint8Array([4, 5, 6]))
    expect([first.status, second.status]).toEqual(["completed", "completed"])
    const bytesOf = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer())
    expect((await bytesOf(first.output)).equals(await bytesOf(second.output))).toBe(false)
    // A file server on loopback that is not the engine's: the job fails and it is never asked.
    let asked = 0
    const elsewhere = createServer((_req, res) => {
      asked++
      res.writeHead(200, { "content-type": "image/png" }).end(new Uint8Array([137, 80, 78, 71]))
    })
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve))
    try {
      const { port } = elsewhere.address() as AddressInfo
      const foreign = await call(server, "POST", "/v1/jobs/submit", key, {
        model: "demo/image-gen/image-to-image",
        input: { prompt: "x", imageUrl: `http://127.0.0.1:${port}/cat.png` }
      })
      const refused = await waitFor(server, key, foreign.body.jobId, ["completed", "failed"])
      expect(refused).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
      expect(asked).toBe(0)
    } finally {
      await new Promise<void>((resolve) => elsewhere.close(() => resolve()))
    }
  })

  it("serves the OpenAPI document, its reference page and the operator dashboard", async () => {
    const doc = await call(server, "GET", "/v1/openapi.json")
    expect(doc.status).toBe(200)
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(["/v1/jobs/submit", "/v1/jobs", "/v1/jobs/{jobId}"]))
    const page = await call(server, "GET", "/docs")
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toContain("text/html")
    // Built into dist/ with its browser files, and announced at start.
    const dashboard = await call(server, "GET", "/dashboard")
    expect([dashboard.status, dashboard.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"])
    expect((await call(server, "GET", "/dashboard/assets/app.js")).status).toBe(200)
    expect(server.output).toContain(`${server.url}/dashboard`)
  })

  it("checks IP allow-lists against the real client address", async () => {
    const account = await call(server, "POST", "/admin/accounts", ADMIN, { name: "ip", creditsMicroCents: 1_000_000 })
    const keyFor = async (allowedIPs: Array<string>) =>
      (await call(server, "POST", `/admin/accounts/${account.body.id}/keys`, ADMIN, { name: "k", allowedIPs })).body.key as string
    const elsewhere = await call(server, "GET", "/v1/jobs", await keyFor(["10.0.0.0/8", "2001:db8::/32"]))
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.body.error.code).toBe("IP_NOT_WHITELISTED")
    expect((await call(server, "GET", "/v1/jobs", await keyFor(["127.0.0.0/8"]))).status).toBe(200)
    expect((await call(server, "GET", "/v1/jobs", await keyFor(["::ffff:127.0.0.1"]))).status).toBe(200)
    const spoofed = await fetch(`${server.url}/v1/jobs`, {
      headers: { authorization: `Bearer ${await keyFor(["10.0.0.1"])}`, "x-forwarded-for": "10.0.0.1" }
    })
    expect(spoofed.status).toBe(403)
  })

  it("hands a running job's generation back on SIGTERM and resumes it after a restart, keeping every job", async () => {
    // The demo's generation is started and polled like a remote provider's: due 20 s after its pickup.
    const slow = await call(server, "POST", "/v1/jobs/submit", key, {
      model: "demo/text-gen/text-to-text",
      input: { prompt: "slow", demoDelayMs: 20_000 }
    })
    await waitFor(server, key, slow.body.jobId, ["processing"])
    const asked = Date.now()
    expect(await server.stop("SIGTERM")).toBe(0)
    // Not waited for: the drain's 30 s did not pass.
    expect(Date.now() - asked).toBeLessThan(15_000)
    server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN })
    expect(KEY_PATTERN.test(server.output)).toBe(false)
    // Claimed again and polled on its stored handle: it ends when its generation is due, 20 s
    // after its first pickup, give or take the poll's jitter (a tenth of the 20 s wait either
    // way). Not handed back, it would wait for its lease (60 s) first: 35 s tells them apart.
    const job = await waitFor(server, key, slow.body.jobId, ["completed", "failed"], 35_000)
    expect(job.status).toBe("completed")
  })
})

describe("CATALOG_FILE", () => {
  it("imports the file at start, and an invalid file stops the start with its reasons", async () => {
    const { writeFileSync } = await import("node:fs")
    const { join } = await import("node:path")
    const { demoCatalog } = await import("../support/demoCatalog.js")
    const dir = tempDataDir()
    const doc = demoCatalog()
    doc.models = doc.models.filter((m) => m.slug === "demo/text-gen/text-to-text")
    const good = join(dir, "catalog.json")
    writeFileSync(good, JSON.stringify(doc))
    const server = await startServer({ DATA_DIR: join(dir, "data"), CATALOG_FILE: good })
    try {
      const models = await (await fetch(`${server.url}/v1/catalog/models`)).json()
      expect(models.map((m: { slug: string }) => m.slug)).toEqual(["demo/text-gen/text-to-text"])
    } finally {
      await server.stop("SIGKILL")
    }
    const bad = join(dir, "bad.json")
    writeFileSync(bad, JSON.stringify({ ...doc, models: [{ ...doc.models[0], category: "nope" }] }))
    await expect(startServer({ DATA_DIR: join(dir, "data2"), CATALOG_FILE: bad })).rejects.toThrow(/unknown category "nope"/)
  })
})
