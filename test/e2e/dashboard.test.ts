import { Effect, Layer } from "effect"
import { DEMO_PROVIDER_ID, type Engine, type GenerationProvider, makeDemoProvider, makeEngine, WebhookSender } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type Browser, chromium, type Page, type Route } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"

/** Debian's chromium package; CI installs it (.ci/run), so there a missing browser is a failure. */
const CHROMIUM = "/usr/bin/chromium"
const present = existsSync(CHROMIUM)
const BASE_PATH = "/ops/genjobs"
const ADMIN = "dashboard-admin-token"
const SHOTS = "/tmp/genjobs-dashboard"

/** Micro-cents as the dashboard shows them. */
const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 })
const money = (microCents: number) => usd.format(microCents / 1_000_000)

/** The demo provider, but a job whose prompt is LOGGED reports progress and log lines until `logged.done`. */
const LOGGED = "a job with a log"
const LOG_SECRET = "sk-live-dashboardsecret0123456789"
const logged = { done: false }
const demo = makeDemoProvider()
const loggingDemo: GenerationProvider = {
  ...demo,
  logSecrets: [LOG_SECRET],
  poll: (handle, request) =>
    request.input["prompt"] === LOGGED && !logged.done
      ? Effect.succeed({ _tag: "Running", progress: 42, logs: ["loading weights", `token ${LOG_SECRET}`, "step 5/12"], pollAfterMs: 50 } as const)
      : demo.poll(handle, request)
}

/** A receiver that is always down, so a delivery fails after its six attempts at once. */
const downReceiver = Layer.succeed(WebhookSender, {
  send: () => Effect.succeed({ statusCode: 503, retryAfter: undefined, body: "receiver down" })
})

describe.skipIf(!present && !process.env["CI"])("the operator dashboard in headless Chromium, under a base path", () => {
  let engine: Engine
  let server: Server
  let origin: string
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []

  const api = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${origin}${BASE_PATH}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json() as any }
  }

  beforeAll(async () => {
    expect(present, `${CHROMIUM} is missing: apt-get install -y chromium`).toBe(true)
    server = createServer().listen(0, "127.0.0.1")
    await new Promise((resolve) => server.once("listening", resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: `${origin}${BASE_PATH}` }),
      providers: { [DEMO_PROVIDER_ID]: loggingDemo },
      http: { adminToken: ADMIN },
      basePath: BASE_PATH,
      webhookSender: downReceiver,
      settings: { webhookRetryDelaysMs: [0, 0, 0, 0, 0] }
    })
    server.on("request", genjobsNode(engine))
    expect((await api("PUT", "/admin/catalog", ADMIN, demoCatalog())).status).toBe(200)
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(10_000)
    page.on("pageerror", (error) => pageErrors.push(error.message))
    page.on("console", (message) => {
      // The refusals the tests provoke (a wrong token, an invalid catalog) are logged by the browser as failed loads.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(message.text())
    })
    // Deactivating a key and rotating a secret ask first.
    page.on("dialog", (dialog) => void dialog.accept())
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    server?.closeAllConnections()
    server?.close()
    await engine?.dispose()
  })

  it("refuses a wrong token, then signs in with the admin token", async () => {
    const response = await page.goto(`${origin}${BASE_PATH}/dashboard`)
    expect(response?.status()).toBe(200)
    expect(response?.headers()["content-security-policy"]).toContain("default-src 'none'")
    await page.getByLabel("Admin token").fill("not-the-token")
    await page.getByRole("button", { name: "Sign in" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not an admin token")
    await page.getByLabel("Admin token").fill(ADMIN)
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { level: 1, name: "Accounts" }).waitFor()
  })

  let accountId: string
  let key: string

  it("creates an account with credit and a key whose secret it shows once", async () => {
    await page.getByLabel("Name", { exact: true }).fill("Dashboard Films")
    await page.getByLabel("Opening credit (USD)").fill("25")
    await page.getByLabel("Budget (USD, optional)").fill("500")
    await page.getByLabel("Budget period").selectOption("total")
    await page.getByRole("button", { name: "Create account" }).click()
    await page.getByRole("heading", { level: 1, name: "Dashboard Films" }).waitFor()
    expect(await page.getByTestId("balance").textContent()).toBe("$25.00")
    accountId = decodeURIComponent(new URL(page.url()).hash.split("/")[2]!)
    expect(accountId).toMatch(/^acc_/)
    expect((await api("GET", `/admin/accounts/${accountId}`, ADMIN)).body.budget).toEqual({ limitMicroCents: 500_000_000, period: "total" })

    await page.getByLabel("Key name").fill("backend")
    await page.getByRole("checkbox", { name: /check_status/ }).check()
    await page.getByRole("checkbox", { name: /submit_job/ }).check()
    await page.getByRole("button", { name: "Create key" }).click()
    const secret = page.getByLabel("New API key secret")
    await secret.waitFor()
    key = await secret.inputValue()
    expect(key).toMatch(/^gjk_/)
    const keys = page.getByRole("table", { name: /Keys of this account/ })
    await expect.poll(() => keys.textContent()).toContain("submit_job, check_status")
    expect(await keys.textContent()).not.toContain(key)
    await page.getByRole("button", { name: "I have stored it" }).click()
    expect(await page.getByLabel("New API key secret").count()).toBe(0)
  })

  it("credits the account and shows the ledger line", async () => {
    await page.getByLabel("Amount (USD)").fill("2.5")
    await page.getByRole("button", { name: "Add credit" }).click()
    await expect.poll(() => page.getByTestId("balance").textContent()).toBe("$27.50")
    const ledger = page.getByRole("table", { name: /Credits, charges and refunds/ })
    await expect.poll(() => ledger.locator("tbody tr").allTextContents()).toEqual([
      expect.stringMatching(/credit\$25\.00/),
      expect.stringMatching(/credit\$2\.50/)
    ])
    expect(await page.getByRole("status").first().textContent()).toContain("Credited $2.50")
  })

  it("sets the account's fair-share weight and Standard Webhooks in its settings", async () => {
    expect(await page.getByTestId("fair-share-weight").textContent()).toBe("1")
    expect(await page.getByTestId("standard-webhooks").textContent()).toBe("off")
    await page.getByLabel("Fair-share weight").fill("3")
    await page.getByLabel("Standard Webhooks headers").check()
    await page.getByRole("button", { name: "Save settings" }).click()
    await expect.poll(() => page.getByTestId("fair-share-weight").textContent()).toBe("3")
    expect(await page.getByTestId("standard-webhooks").textContent()).toBe("on")
    const stored = (await api("GET", `/admin/accounts/${accountId}`, ADMIN)).body
    expect([stored.fairShareWeight, stored.standardWebhooks]).toEqual([3, true])
  })

  it("rotates the webhook secret, keeping the old one for the overlap", async () => {
    const before = (await api("GET", `/admin/accounts/${accountId}`, ADMIN)).body.webhookSecret
    await page.getByLabel("Keep the old secret signing for").selectOption({ label: "1 hour" })
    await page.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByText("Previous secret, still signing").waitFor()
    const after = (await api("GET", `/admin/accounts/${accountId}`, ADMIN)).body
    expect(after.previousWebhookSecret).toBe(before)
    expect(Date.parse(after.previousWebhookSecretExpiresAt) - Date.now()).toBeGreaterThan(3_500_000)
    await page.getByRole("button", { name: "Show secrets" }).click()
    expect(await page.getByTestId("webhook-secret").textContent()).toBe(after.webhookSecret)
  })

  it("watches a job submitted with that key through the API complete, and previews its picture", async () => {
    await page.getByRole("link", { name: "Jobs of this account" }).click()
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor()
    const submitted = await api("POST", "/v1/jobs/submit", key, {
      model: "demo/image-gen/text-to-image",
      input: { prompt: "a lighthouse at dusk", width: 64, height: 48, demoDelayMs: 6_000 }
    })
    expect(submitted.status).toBe(200)
    const row = page.locator(`tr[data-job="${submitted.body.jobId}"]`)
    // No click: the list refreshes itself, first to show the new job, then while it runs.
    await row.waitFor()
    expect(await row.textContent()).toMatch(/processing50%/)
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toMatch(/completed100%/)

    await row.getByRole("link", { name: submitted.body.jobId }).click()
    await page.getByRole("heading", { level: 1, name: `Job ${submitted.body.jobId}` }).waitFor()
    const picture = page.getByRole("img", { name: "Output 1: image" })
    await picture.waitFor()
    await expect.poll(() => picture.evaluate((img: HTMLImageElement) => [img.complete, img.naturalWidth, img.naturalHeight]))
      .toEqual([true, 64, 48])
    // The file's own URL, loaded by the browser without any key: output URLs are capabilities.
    const done = await api("GET", `/v1/jobs/${submitted.body.jobId}`, key)
    expect(await picture.getAttribute("src")).toBe(done.body.outputs[0].url)
    await page.screenshot({ path: `${SHOTS}-job.png`, fullPage: true })
  }, 45_000)

  it("refuses an invalid catalog with its reasons, and shows a valid change before applying it", async () => {
    await page.getByRole("link", { name: "Catalog" }).click()
    const editor = page.getByLabel("Catalog document (JSON)")
    await expect.poll(() => editor.inputValue()).toContain("demo/image-gen/text-to-image")
    const stored = JSON.parse(await editor.inputValue())

    await editor.fill(JSON.stringify({ ...stored, models: [{ ...stored.models[0], providerId: "nobody" }] }, null, 2))
    await page.getByRole("button", { name: "Check and preview changes" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/unknown providerId "nobody"/)

    const renamed = { ...stored, models: stored.models.map((m: any, i: number) => (i === 0 ? { ...m, name: "Lighthouse Painter" } : m)) }
    await editor.fill(JSON.stringify(renamed, null, 2))
    await page.getByRole("button", { name: "Check and preview changes" }).click()
    const diff = page.getByRole("region", { name: /Changes against revision/ })
    await expect.poll(() => diff.textContent()).toMatch(new RegExp(`changed ${stored.models[0].slug}:\\s*name$`))
    // Nothing is stored before the operator applies.
    expect((await api("GET", "/admin/catalog", ADMIN)).body.models[0].name).toBe(stored.models[0].name)
    await page.screenshot({ path: `${SHOTS}-catalog.png`, fullPage: true })
    await page.getByRole("button", { name: "Apply these changes" }).click()
    await expect.poll(() => page.getByRole("status").first().textContent()).toMatch(/Catalog replaced: revision \d+/)
    expect((await api("GET", "/admin/catalog", ADMIN)).body.models[0].name).toBe("Lighthouse Painter")
  })

  it("never applies over a catalog another operator replaced since the preview: it shows the new changes first", async () => {
    await page.getByRole("link", { name: "Catalog" }).click()
    const editor = page.getByLabel("Catalog document (JSON)")
    await expect.poll(() => editor.inputValue()).toContain("demo/image-gen/text-to-image")
    const stored = JSON.parse(await editor.inputValue())
    const mine = { ...stored, models: stored.models.map((m: any, i: number) => (i === 0 ? { ...m, name: "Mine" } : m)) }
    await editor.fill(JSON.stringify(mine, null, 2))
    await page.getByRole("button", { name: "Check and preview changes" }).click()
    const diff = page.getByRole("region", { name: /Changes against revision/ })
    await expect.poll(() => diff.textContent()).toMatch(new RegExp(`changed ${stored.models[0].slug}:\\s*name$`))

    // Another operator renames the second model at the last moment: after anything the page could
    // check, just before its own replace reaches the server.
    const theirs = { ...stored, models: stored.models.map((m: any, i: number) => (i === 1 ? { ...m, name: "Theirs" } : m)) }
    let replaced: { status: number; body: any } | undefined
    const raceTheApply = async (route: Route) => {
      if (route.request().method() === "PUT" && replaced === undefined) replaced = await api("PUT", "/admin/catalog", ADMIN, theirs)
      await route.continue()
    }
    await page.route("**/admin/catalog", raceTheApply)
    await page.getByRole("button", { name: "Apply these changes" }).click()
    await expect.poll(() => replaced?.status).toBe(200)
    await page.unroute("**/admin/catalog", raceTheApply)
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(
      new RegExp(`changed since the preview \\(now revision ${replaced!.body.revision}\\)`)
    )
    // Their change stands; the preview now says mine would undo it.
    const now = (await api("GET", "/admin/catalog", ADMIN)).body
    expect(now.models.map((m: any) => m.name).slice(0, 2)).toEqual([stored.models[0].name, "Theirs"])
    await expect.poll(() => page.getByRole("region", { name: `Changes against revision ${replaced!.body.revision}` }).textContent())
      .toContain(stored.models[1].slug)
  })

  it("retries a failed webhook delivery", async () => {
    const submitted = await api("POST", "/v1/jobs/submit", key, {
      model: "demo/text-gen/text-to-text",
      input: { prompt: "hello" },
      webhookUrl: "https://hooks.genjobs.test/genjobs"
    })
    let delivery: any
    for (let i = 0; i < 200 && delivery?.status !== "failed"; i++) {
      await new Promise((r) => setTimeout(r, 50))
      delivery = (await api("GET", `/admin/webhooks/deliveries?accountId=${accountId}`, ADMIN)).body.deliveries[0]
    }
    expect(delivery).toMatchObject({ jobId: submitted.body.jobId, status: "failed" })

    await page.getByRole("link", { name: "Webhook deliveries" }).click()
    const row = page.locator(`tr[data-delivery="${delivery.id}"]`)
    await expect.poll(() => row.textContent()).toContain("6 attempts")
    await row.getByRole("button", { name: `Retry delivery ${delivery.id}` }).click()
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain(`Delivery ${delivery.id} is pending again`)
    // Sent again at once; the receiver is still down, so it fails again after a seventh attempt.
    await expect.poll(async () => (await api("GET", `/admin/webhooks/deliveries?accountId=${accountId}`, ADMIN)).body.deliveries[0].attempts.length)
      .toBeGreaterThan(6)
    const audit = (await api("GET", `/admin/audit?action=delivery.retry&target=${delivery.id}`, ADMIN)).body.entries
    expect(audit).toEqual([expect.objectContaining({ actor: "admin", target: delivery.id })])
  })

  it("draws the Usage page's charts with the totals of the jobs that ran", async () => {
    // Two more jobs that complete and one that fails (and is refunded), beside the two of the tests above.
    const inputs = [{ prompt: "one" }, { prompt: "two" }, { prompt: "three", demoFail: true }]
    const ids: Array<string> = []
    for (const input of inputs) {
      const submitted = await api("POST", "/v1/jobs/submit", key, { model: "demo/text-gen/text-to-text", input })
      expect(submitted.status).toBe(200)
      ids.push(submitted.body.jobId)
    }
    await expect.poll(async () => Promise.all(ids.map(async (id) => (await api("GET", `/v1/jobs/${id}`, key)).body.status)), { timeout: 15_000 })
      .toEqual(["completed", "completed", "failed"])
    const jobs: Array<any> = (await api("GET", `/admin/jobs?accountId=${accountId}&limit=100`, ADMIN)).body.jobs
    expect(jobs).toHaveLength(5)
    const completed = jobs.filter((j) => j.status === "completed")
    const spent = completed.reduce((n, j) => n + j.costMicroCents, 0)
    expect(spent).toBeGreaterThan(0)

    await page.getByRole("link", { name: "Usage", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Usage" }).waitFor()
    const chart = (id: string) => page.getByTestId(id)
    for (const id of ["chart-spend-model", "chart-spend-key", "chart-outcomes", "chart-queue", "chart-runtime"]) {
      await expect.poll(() => chart(id).locator("svg[role=img] rect").count(), { message: id }).toBeGreaterThan(0)
    }
    await expect.poll(() => chart("chart-failure-rate").locator("svg[role=img] path").count()).toBe(1)
    // The table views hold the numbers: spend by model and by key sum to what the completed jobs cost.
    expect(await page.getByTestId("chart-spend-model-table").locator("tfoot td").last().textContent()).toBe(money(spent))
    const byModel = await page.getByTestId("chart-spend-model-table").locator("thead th").allTextContents()
    expect(byModel.slice(1, -1).sort()).toEqual([...new Set(completed.map((j) => j.model))].sort())
    const byKey = page.getByTestId("chart-spend-key-table")
    const { hint } = (await api("GET", `/admin/accounts/${accountId}/keys`, ADMIN)).body.keys[0]
    expect(await byKey.locator("thead th").nth(1).textContent()).toBe(`backend (${hint}…)`)
    expect(await byKey.locator("tfoot td").last().textContent()).toBe(money(spent))
    // Jobs by outcome: five submitted, one failed, none cancelled.
    expect(await page.getByTestId("chart-outcomes-table").locator("tfoot td").allTextContents()).toEqual(["4", "1", "0", "5"])
    const rates = await page.getByTestId("chart-failure-rate-table").locator("tbody td").allTextContents()
    expect(rates.filter((r) => r !== "0.0%").length).toBeGreaterThan(0)
    // Run times: a p50 and a p95 per model that completed a job; the queue is empty now.
    const runtimeRows = await page.getByTestId("chart-runtime-table").locator("tbody th").allTextContents()
    expect(runtimeRows.sort()).toEqual([...new Set(completed.map((j) => j.model))].sort())
    expect(await chart("chart-runtime").locator("svg[role=img] rect").count()).toBe(2 * runtimeRows.length)
    await expect.poll(() => page.getByTestId("queue-depth").textContent()).toBe("0")
    expect(await page.getByTestId("in-flight").textContent()).toBe("0")
    await page.screenshot({ path: `${SHOTS}-usage.png`, fullPage: true })
    // The table view can be shown, and its button says so.
    const toggle = chart("chart-spend-model").getByRole("button", { name: "Show as a table" })
    await toggle.click()
    expect(await chart("chart-spend-model").getByRole("button", { name: "Hide the table" }).getAttribute("aria-expanded")).toBe("true")
    await expect.poll(() => page.getByRole("table", { name: "Spend per day by model" }).isVisible()).toBe(true)
  }, 45_000)

  it("sets budgets on the account and on a key, and shows what the key spent against its limit", async () => {
    await page.goto(`${origin}${BASE_PATH}/dashboard#/accounts/${accountId}`)
    const keyId = (await api("GET", `/admin/accounts/${accountId}/keys`, ADMIN)).body.keys[0].id
    const jobs: Array<any> = (await api("GET", `/admin/jobs?accountId=${accountId}&limit=100`, ADMIN)).body.jobs
    const spent = jobs.filter((j) => j.status === "completed").reduce((n, j) => n + j.costMicroCents, 0)

    await page.getByLabel("Budget of the account (USD)").fill("100")
    await page.getByLabel("Budget period of the account").selectOption("month")
    // The account has had a budget since its creation (500 USD in total): changed here.
    await page.getByRole("button", { name: "Change budget" }).click()
    await expect.poll(() => page.getByTestId("budget-account").textContent()).toContain(`${money(spent)} of $100.00 this month`)

    await page.getByRole("button", { name: /^Edit the budget of key backend/ }).click()
    await page.getByLabel("Budget of key backend (USD)").fill("0.25")
    await page.getByLabel("Budget period of key backend").selectOption("day")
    await page.getByRole("button", { name: "Set budget" }).last().click()
    const bar = page.getByTestId(`budget-key-${keyId}`)
    await expect.poll(() => bar.textContent()).toContain(`${money(spent)} of $0.25 this day`)
    expect(await bar.getByRole("meter").getAttribute("value")).toBe(String(spent))
    expect((await api("GET", `/admin/accounts/${accountId}/keys`, ADMIN)).body.keys[0].budget).toEqual({ limitMicroCents: 250_000, period: "day" })
    await page.screenshot({ path: `${SHOTS}-budgets.png`, fullPage: true })

    // Removed: the key is capped by its account's budget only.
    await page.getByRole("button", { name: /^Edit the budget of key backend/ }).click()
    await page.getByRole("button", { name: "Remove budget" }).last().click()
    await expect.poll(() => bar.textContent()).toBe("No budget")
    expect((await api("GET", `/admin/accounts/${accountId}/keys`, ADMIN)).body.keys[0].budget).toBeNull()
  })

  it("edits models in the catalog's form view and applies them through the same check and preview", async () => {
    await page.getByRole("link", { name: "Catalog" }).click()
    await page.getByRole("button", { name: "Models form" }).click()
    const slug = "demo/video-gen/text-to-video"
    const model = page.locator(`fieldset[data-model="${slug}"]`)
    await model.getByLabel("Name").fill("Film Maker")
    await model.getByLabel("Visibility").selectOption("private")
    await model.getByLabel(`Status of ${slug} version v1`).selectOption("deprecated")
    await model.getByLabel(`Base credits of ${slug} version v1`).fill("75")
    await page.getByRole("button", { name: "Check and preview changes" }).click()
    const diff = page.getByRole("region", { name: /Changes against revision/ })
    await expect.poll(() => diff.textContent()).toMatch(new RegExp(`changed ${slug}:\\s*name, visibility, versions$`))
    await page.screenshot({ path: `${SHOTS}-catalog-form.png`, fullPage: true })
    await page.getByRole("button", { name: "Apply these changes" }).click()
    await expect.poll(() => page.getByRole("status").first().textContent()).toMatch(/Catalog replaced: revision \d+/)
    const stored = (await api("GET", "/admin/catalog", ADMIN)).body.models.find((m: any) => m.slug === slug)
    expect([stored.name, stored.visibility, stored.versions[0].status, stored.versions[0].pricing.baseCredits])
      .toEqual(["Film Maker", "private", "deprecated", 75])
    // The JSON view shows the same document.
    await page.getByRole("button", { name: "JSON document" }).click()
    expect(await page.getByLabel("Catalog document (JSON)").inputValue()).toContain("\"Film Maker\"")
  })

  it("deactivates the key, and the API refuses it from then on", async () => {
    await page.goto(`${origin}${BASE_PATH}/dashboard#/accounts/${accountId}`)
    await page.getByRole("button", { name: /^Deactivate key backend/ }).click()
    const keys = page.getByRole("table", { name: /Keys of this account/ })
    await expect.poll(() => keys.textContent()).toContain("deactivated")
    const refused = await api("GET", "/v1/jobs", key)
    expect([refused.status, refused.body.error.code]).toEqual([401, "API_KEY_INACTIVE"])
    expect(pageErrors).toEqual([])
  })

  it("shows the waiting jobs per account and model with their positions", async () => {
    // One job at a time on the demo provider, so the others wait.
    const catalog = demoCatalog()
    const limited = { ...catalog, providers: catalog.providers.map((p) => ({ ...p, limits: { maxInFlight: 1 } })) }
    expect((await api("PUT", "/admin/catalog", ADMIN, limited)).status).toBe(200)
    const keyOf = async (name: string) => {
      const account = await api("POST", "/admin/accounts", ADMIN, { name, creditsMicroCents: 10_000_000 })
      return (await api("POST", `/admin/accounts/${account.body.id}/keys`, ADMIN, { name: "k", scopes: [], allowedIPs: [] })).body.key as string
    }
    const studio = await keyOf("Queue Studio")
    const other = await keyOf("Other Lab")
    const submit = (k: string) =>
      api("POST", "/v1/jobs/submit", k, { model: "demo/text-gen/text-to-text", input: { prompt: "wait", demoDelayMs: 10_000 } })
    const running = (await submit(studio)).body.jobId as string
    await expect.poll(async () => (await api("GET", `/v1/jobs/${running}`, studio)).body.status, { timeout: 10_000 }).toBe("processing")
    const jobs = [running, ...[await submit(studio), await submit(studio), await submit(other)].map((r) => r.body.jobId as string)]
    try {
      await page.getByRole("link", { name: "Queue" }).click()
      await page.getByRole("heading", { level: 1, name: "Queue" }).waitFor()
      const table = page.getByRole("table", { name: /Waiting jobs/ })
      const rows = table.locator("tbody tr")
      // One of the studio's jobs runs; its two others wait, and the lab's one job waits beside them, not behind.
      await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2)
      const cells = await rows.evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)))
      expect(cells.map((c) => c[1])).toEqual(["demo/text-gen/text-to-text", "demo/text-gen/text-to-text"])
      const byWaiting = Object.fromEntries(cells.map((c) => [c[3], c[4]]))
      // The lab's one job takes the studio's next key: second, between the studio's two (1 and 3), not behind them.
      expect(byWaiting).toEqual({ "2": "1–3", "1": "2" })
      await page.screenshot({ path: `${SHOTS}-queue.png`, fullPage: true })
      expect(pageErrors).toEqual([])
    } finally {
      for (const [i, jobId] of jobs.entries()) await api("POST", `/v1/jobs/${jobId}/cancel`, i < 3 ? studio : other)
    }
  }, 45_000)

  it("shows a running job's provider progress and its redacted log lines, and the lines logged until it ended", async () => {
    // The catalog without the queue test's limit of one job at a time, and an account of its own
    // (the first one's key is deactivated by now).
    expect((await api("PUT", "/admin/catalog", ADMIN, demoCatalog())).status).toBe(200)
    const account = await api("POST", "/admin/accounts", ADMIN, { name: "Log Studio", creditsMicroCents: 10_000_000 })
    const logKey = (await api("POST", `/admin/accounts/${account.body.id}/keys`, ADMIN, { name: "k", scopes: [], allowedIPs: [] })).body.key as string
    const submitted = await api("POST", "/v1/jobs/submit", logKey, { model: "demo/text-gen/text-to-text", input: { prompt: LOGGED } })
    expect(submitted.status).toBe(200)
    const jobId = submitted.body.jobId as string
    await page.goto(`${origin}${BASE_PATH}/dashboard#/jobs/${jobId}`)
    await page.getByRole("heading", { level: 1, name: `Job ${jobId}` }).waitFor()
    const providerProgress = page.getByLabel("Provider's progress")
    await expect.poll(() => providerProgress.getAttribute("value"), { timeout: 10_000 }).toBe("42")
    expect(await page.getByLabel("Progress", { exact: true }).getAttribute("value")).toBe("50")
    const lines = page.getByRole("list", { name: "Provider log lines" }).getByRole("listitem")
    await expect.poll(() => lines.allTextContents(), { timeout: 10_000 }).toHaveLength(3)
    expect(await lines.locator("code").allTextContents()).toEqual(["loading weights", "token [REDACTED]", "step 5/12"])
    expect((await page.content()).includes(LOG_SECRET)).toBe(false)
    await page.screenshot({ path: `${SHOTS}-job-log.png`, fullPage: true })

    logged.done = true
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Status:" }).textContent(), { timeout: 15_000 }).toContain("completed")
    // The page stops following, and the lines it showed stay, once each.
    expect(await lines.locator("code").allTextContents()).toEqual(["loading weights", "token [REDACTED]", "step 5/12"])
    expect(await providerProgress.getAttribute("value")).toBe("42")
    expect(pageErrors).toEqual([])
  }, 45_000)
})
