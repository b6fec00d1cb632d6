import { DEMO_PROVIDER_ID, type Engine, layerNodeWebhookSender, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { createServer, type Server } from "node:https"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { selfSignedCertificate } from "../support/tls.js"
import { waitFor } from "../support/waitFor.js"

const ADMIN = "admin-secret"
const ORIGIN = "http://host.test"
const DEADLINE_MS = 500
const TRICKLERS = 6
const PER_ACCOUNT = 4

/**
 * Issue 12, item 3: a receiver that trickles a byte every 50 ms (its socket is never idle) beside
 * a fast one, over real TLS. The trickler must not delay the other tenant, every attempt is cut
 * off at the deadline and recorded once, and its deliveries fail after the sixth attempt.
 */
describe("a trickling webhook receiver cannot stall delivery", () => {
  const tls = selfSignedCertificate()
  const requests: Array<{ path: string; deliveryId: string; attempt: string; at: number }> = []
  let openTrickles = 0
  let mostTrickles = 0
  let server: Server
  let engine: Engine
  let hook = ""

  beforeAll(async () => {
    server = createServer(tls, (req, res) => {
      requests.push({
        path: req.url ?? "",
        deliveryId: String(req.headers["x-webhook-delivery-id"]),
        attempt: String(req.headers["x-webhook-attempt"]),
        at: Date.now()
      })
      if (req.url !== "/trickle") return void res.writeHead(204).end()
      mostTrickles = Math.max(mostTrickles, ++openTrickles)
      res.writeHead(200, { "content-type": "text/plain" })
      const timer = setInterval(() => res.write("."), 50)
      res.on("close", () => {
        clearInterval(timer)
        openTrickles--
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    hook = `https://127.0.0.1:${(server.address() as { port: number }).port}`
    engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: ORIGIN }),
      providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
      http: { adminToken: ADMIN },
      settings: { webhookDeadlineMs: DEADLINE_MS, webhookRetryDelaysMs: [100, 100, 100, 100, 100], webhookDeliveriesPerAccount: PER_ACCOUNT },
      workers: 4,
      webhookSender: layerNodeWebhookSender({ allowPrivate: true, ca: tls.cert })
    })
  })
  afterAll(async () => {
    await engine.dispose()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  const call = async (method: string, path: string, auth: string, body?: unknown) => {
    const response = await engine.fetch(new Request(`${ORIGIN}${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))
    return response.json() as Promise<any>
  }
  const tenant = async (name: string) => {
    const account = await call("POST", "/admin/accounts", ADMIN, { name, creditsMicroCents: 10_000_000 })
    return (await call("POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })).key as string
  }
  const submit = (key: string, path: string) =>
    call("POST", "/v1/jobs/submit", key, { model: "demo/text-gen/text-to-text", input: { prompt: "p" }, webhookUrl: `${hook}${path}` })

  it("the fast tenant's webhook arrives at once; the trickler's fail after exactly six attempts, none sent twice", async () => {
    await call("PUT", "/admin/catalog", ADMIN, demoCatalog())
    const slow = await tenant("slow")
    const fast = await tenant("fast")
    for (let i = 0; i < TRICKLERS; i++) await submit(slow, "/trickle")
    expect(await waitFor(() => openTrickles === PER_ACCOUNT, 5_000)).toBe(true)

    const submitted = Date.now()
    const job = await submit(fast, "/fast")
    expect(await waitFor(() => requests.some((r) => r.path === "/fast"), 5_000)).toBe(true)
    const latency = requests.find((r) => r.path === "/fast")!.at - submitted
    console.log(`fast tenant's webhook ${latency} ms after submit, ${openTrickles} trickling attempts open`)
    expect(latency).toBeLessThan(2_000)
    expect(openTrickles).toBeGreaterThan(0)

    const failedOf = async () => (await call("GET", "/v1/webhooks/deliveries?status=failed&limit=100", slow)).deliveries as Array<any>
    expect(await waitFor(async () => (await failedOf()).length === TRICKLERS, 30_000)).toBe(true)
    for (const delivery of await failedOf()) {
      expect(delivery.attempts).toHaveLength(6)
      for (const a of delivery.attempts) expect(a.error).toMatch(/^timed out: no complete answer within 0.5 s/)
      const sent = requests.filter((r) => r.deliveryId === delivery.id).map((r) => r.attempt)
      expect(sent).toEqual(["1", "2", "3", "4", "5", "6"])
    }
    expect(mostTrickles).toBe(PER_ACCOUNT)
    const [fastDelivery] = (await call("GET", `/v1/webhooks/deliveries?jobId=${job.jobId}`, fast)).deliveries
    expect(fastDelivery).toMatchObject({ status: "sent" })
  }, 60_000)
})
