import { genjobsNode } from "genjobs/http"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

/** Debian's chromium package; CI installs it (.ci/run), so there a missing browser is a failure. */
const CHROMIUM = "/usr/bin/chromium"
const present = existsSync(CHROMIUM)
const BASE_PATH = "/api/genjobs"
const SCREENSHOT = "/tmp/genjobs-docs.png"

describe.skipIf(!present && !process.env["CI"])("the reference page at /docs, in headless Chromium", () => {
  let engine: HttpEngine
  let server: Server
  let origin: string
  beforeAll(async () => {
    expect(present, `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true)
    engine = await makeHttpEngine()
    // Mounted under a base path, as an embedder would: the page comes with the engine.
    server = createServer(genjobsNode({ fetch: engine.handler }, { basePath: BASE_PATH })).listen(0, "127.0.0.1")
    await new Promise((resolve) => server.once("listening", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    server?.closeAllConnections()
    server?.close()
    await engine?.dispose()
  })

  it("renders the API's operations and asks no other host for anything", async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    })
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      const elsewhere: Array<string> = []
      const failed: Array<string> = []
      page.on("request", (request) => {
        const url = new URL(request.url())
        if ((url.protocol === "http:" || url.protocol === "https:") && url.origin !== origin) elsewhere.push(request.url())
      })
      page.on("requestfailed", (request) => failed.push(`${request.url()}: ${request.failure()?.errorText}`))
      const response = await page.goto(`${origin}${BASE_PATH}/docs`, { waitUntil: "load" })
      expect(response?.status()).toBe(200)
      await page.getByText("Submit a job").first().waitFor({ state: "visible", timeout: 20_000 })
      await page.screenshot({ path: SCREENSHOT })
      expect(elsewhere).toEqual([])
      expect(failed).toEqual([])
    } finally {
      await browser.close()
    }
  })
})
