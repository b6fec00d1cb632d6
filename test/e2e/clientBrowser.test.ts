/**
 * genjobs/client in a browser page: the client bundled as an app's bundler would (nothing but
 * the client in it), loaded by a page in headless Chromium, calling an engine on loopback. The
 * page and the engine share one origin, as they do behind a same-origin proxy (docs/client.md#in-the-browser).
 */
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine, signatureHeader } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bundleClient } from "../client/bundle.js"
import { demoCatalog } from "../support/demoCatalog.js"

/** Debian's chromium package; CI installs it (.ci/run), so there a missing browser is a failure. */
const CHROMIUM = "/usr/bin/chromium"
const present = existsSync(CHROMIUM)
const BASE_PATH = "/api"
const ADMIN = "client-browser-admin"
const INSECURE_HOST = "genjobs.test"
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const PAGE = `<!doctype html><meta charset="utf-8"><title>client</title>
<script type="module">import * as genjobs from "/client.js"; window.genjobs = genjobs</script>`

describe.skipIf(!present && !process.env["CI"])("genjobs/client in headless Chromium", () => {
  let engine: Engine
  let server: Server
  let origin: string
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  /** The engine's requests: path, and the Prefer header of a long poll. */
  const requests: Array<string> = []
  /** The Idempotency-Key of each submit. */
  const idempotencyKeys: Array<string | undefined> = []

  const admin = async (path: string, body: unknown) => {
    const response = await fetch(`${origin}${BASE_PATH}${path}`, {
      method: path === "/admin/catalog" ? "PUT" : "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    expect(response.ok).toBe(true)
    return response.json() as Promise<any>
  }

  const newKey = async (creditsMicroCents: number) => {
    const account = await admin("/admin/accounts", { name: "browser", creditsMicroCents })
    return (await admin(`/admin/accounts/${account.id}/keys`, { name: "page" })).key as string
  }

  beforeAll(async () => {
    expect(present, `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true)
    const { code, imports } = await bundleClient()
    expect(imports).toEqual([])
    server = createServer().listen(0, "127.0.0.1")
    await new Promise((resolve) => server.once("listening", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: `${origin}${BASE_PATH}` }),
      providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
      http: { adminToken: ADMIN },
      basePath: BASE_PATH,
      webhookDispatchers: 0
    })
    const engineHandler = genjobsNode(engine)
    server.on("request", (request, response) => {
      if (request.url === "/") return response.writeHead(200, { "content-type": "text/html" }).end(PAGE)
      if (request.url === "/client.js") return response.writeHead(200, { "content-type": "text/javascript" }).end(code)
      requests.push(`${request.url} ${request.headers.prefer ?? ""}`.trim())
      if (request.url?.endsWith("/v1/jobs/submit")) idempotencyKeys.push(request.headers["idempotency-key"] as string | undefined)
      engineHandler(request, response)
    })
    await admin("/admin/catalog", demoCatalog())
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // genjobs.test: the same server under a name that is not loopback, for a page that is not a secure context.
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", `--host-resolver-rules=MAP ${INSECURE_HOST} 127.0.0.1`]
    })
    page = await browser.newPage()
    page.setDefaultTimeout(20_000)
    page.on("pageerror", (error) => pageErrors.push(error.message))
    await page.goto(`${origin}/`)
    await page.waitForFunction(() => "genjobs" in window)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    server?.closeAllConnections()
    server?.close()
    await engine?.dispose()
  })

  it("submits a job, follows its status stream to completed, and reads it back and in the list", async () => {
    const apiKey = await newKey(10_000_000)
    requests.length = 0
    const result = await page.evaluate(async ({ baseUrl, apiKey }) => {
      const { createClient } = (window as any).genjobs
      const client = createClient({ baseUrl, apiKey })
      const seen: Array<string> = []
      const job = await client.subscribe("demo/text-gen/text-to-text", { prompt: "from the page" }, {
        onUpdate: (j: { status: string }) => seen.push(j.status)
      })
      const again = await client.get(job.jobId)
      const listed = []
      for await (const summary of client.jobs({ limit: 1 })) listed.push(summary.jobId)
      return { job, again, seen, listed, balance: (await client.account()).account.balanceMicroCents }
    }, { baseUrl: `${origin}${BASE_PATH}`, apiKey })
    expect(result.job).toMatchObject({ status: "completed", progress: 100 })
    expect(result.again).toEqual(result.job)
    expect(result.seen.at(-1)).toBe("completed")
    expect(result.listed).toEqual([result.job.jobId])
    expect(result.balance).toBeLessThan(10_000_000)
    // Chromium's fetch streams the answer: the client waited on the event stream, not by polling.
    expect(requests.filter((r) => r.endsWith("/events"))).toEqual([`${BASE_PATH}/v1/jobs/${result.job.jobId}/events`])
    expect(requests.filter((r) => r.includes("wait="))).toEqual([])
    expect(pageErrors).toEqual([])
  })

  it("uploads a Blob the engine then serves", async () => {
    const apiKey = await newKey(10_000_000)
    const upload = await page.evaluate(async ({ baseUrl, apiKey }) => {
      const client = (window as any).genjobs.createClient({ baseUrl, apiKey })
      return client.upload(new Blob([new Uint8Array([137, 80, 78, 71, 7])], { type: "image/png" }), { filename: "page.png" })
    }, { baseUrl: `${origin}${BASE_PATH}`, apiKey })
    expect(upload.fileUrl.startsWith(`${origin}${BASE_PATH}/`)).toBe(true)
    expect([...new Uint8Array(await (await fetch(upload.fileUrl)).arrayBuffer())]).toEqual([137, 80, 78, 71, 7])
  })

  it("rejects with typed errors: a refusal and a failed job", async () => {
    const [poorKey, richKey] = [await newKey(0), await newKey(10_000_000)]
    const errors = await page.evaluate(async ({ baseUrl, poorKey, richKey }) => {
      const { createClient, GenjobsError, JobFailedError } = (window as any).genjobs
      const refused = await createClient({ baseUrl, apiKey: poorKey }).run("demo/image-gen/text-to-image", { prompt: "x" }).catch((e: any) => e)
      const failed = await createClient({ baseUrl, apiKey: richKey }).run("demo/text-gen/text-to-text", { prompt: "x", demoFail: true }).catch((e: any) => e)
      return {
        refused: { isClass: refused instanceof GenjobsError, tag: refused._tag, code: refused.code, status: refused.status },
        failed: { isClass: failed instanceof JobFailedError, tag: failed._tag, code: failed.code, status: failed.job.status }
      }
    }, { baseUrl: `${origin}${BASE_PATH}`, poorKey, richKey })
    expect(errors).toEqual({
      refused: { isClass: true, tag: "GenjobsError", code: "INSUFFICIENT_BALANCE", status: 402 },
      failed: { isClass: true, tag: "JobFailedError", code: "GENERATION_FAILED", status: "failed" }
    })
  })

  it("verifies a webhook signed by the engine with WebCrypto", async () => {
    const now = Math.floor(Date.now() / 1000)
    const body = JSON.stringify({ jobId: "job_1", status: "completed" })
    const headers = { "X-Service-Timestamp": String(now), "X-Service-Signature": signatureHeader(["whsec"], now, body) }
    const results = await page.evaluate(async ({ headers, body }) => {
      const { verifyWebhook } = (window as any).genjobs
      return [
        await verifyWebhook({ secret: "whsec", headers: new Headers(headers), body }),
        await verifyWebhook({ secret: "other", headers, body })
      ]
    }, { headers, body })
    expect(results).toEqual([{ ok: true, timestamp: now }, { ok: false, reason: "bad_signature" }])
  })

  // A page over plain http on another host has no crypto.randomUUID: submits still carry a key.
  it("submits from a page that is not a secure context, with a UUID Idempotency-Key", async () => {
    const apiKey = await newKey(10_000_000)
    const insecure = await browser.newPage()
    try {
      const port = new URL(origin).port
      await insecure.goto(`http://${INSECURE_HOST}:${port}/`)
      await insecure.waitForFunction(() => "genjobs" in window)
      idempotencyKeys.length = 0
      const result = await insecure.evaluate(async ({ baseUrl, apiKey }) => {
        const client = (window as any).genjobs.createClient({ baseUrl, apiKey })
        const context = { secure: window.isSecureContext, randomUUID: typeof crypto.randomUUID }
        return { ...context, submitted: await client.submit("demo/text-gen/text-to-text", { prompt: "plain http" }) }
      }, { baseUrl: `http://${INSECURE_HOST}:${port}${BASE_PATH}`, apiKey })
      expect([result.secure, result.randomUUID, result.submitted.status]).toEqual([false, "undefined", "pending"])
      expect(idempotencyKeys).toHaveLength(1)
      expect(idempotencyKeys[0]).toMatch(UUID)
    } finally {
      await insecure.close()
    }
  })
})
