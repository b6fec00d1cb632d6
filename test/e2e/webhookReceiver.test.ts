import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { webcrypto } from "node:crypto"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeNodeWebhookSender } from "../../adapters/webhooks/NodeWebhookSender.js"
import { signatureHeader } from "../../src/domain/webhookSignature.js"
import { startServer, tempDataDir } from "../support/serverProcess.js"
import { selfSignedCertificate } from "../support/tls.js"

/** Answers at once, then a byte of body every 50 ms and never ends: the socket is never idle. */
const trickle = (res: import("node:http").ServerResponse) => {
  res.writeHead(200, { "content-type": "text/plain" })
  const timer = setInterval(() => res.write("."), 50)
  res.on("close", () => clearInterval(timer))
}

/** The receiver's check, written from the spec alone with WebCrypto: not the engine's function. */
const receiverAccepts = async (secret: string, timestamp: string, body: string, header: string) => {
  const key = await webcrypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  const mac = Buffer.from(await webcrypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${timestamp}.${body}`))).toString("hex")
  return header.split(",").includes(`sha256=${mac}`) && Math.abs(Date.now() / 1000 - Number(timestamp)) <= 300
}

describe("webhooks to a real https receiver", () => {
  const tls = selfSignedCertificate()
  const got: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = []
  let server: Server
  let port = 0
  beforeAll(async () => {
    server = createServer(tls, (req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        got.push({ headers: req.headers, body })
        if (req.url === "/slow") return
        if (req.url === "/trickle") return trickle(res)
        if (req.url === "/redirect") res.writeHead(307, { location: "https://redirected.genjobs.test/" }).end()
        else res.writeHead(200, { "content-type": "text/plain" }).end("thanks")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })

  const send = (url: string, allowPrivate: boolean, headers: Record<string, string> = {}, body = "{}", timeoutMs = 5_000) =>
    Effect.runPromise(
      Effect.result(makeNodeWebhookSender({ allowPrivate, ca: tls.cert }).send({ url, headers, body, timeoutMs }))
    )

  it("delivers a signed POST that an independent verifier accepts", async () => {
    const body = JSON.stringify({ jobId: "job_1", status: "completed" })
    const timestamp = String(Math.floor(Date.now() / 1000))
    const result = await send(`https://localhost:${port}/hook`, true, {
      "content-type": "application/json",
      "x-service-timestamp": timestamp,
      "x-service-signature": signatureHeader(["whsec_a", "whsec_b"], Number(timestamp), body)
    }, body)
    expect(result).toMatchObject({ _tag: "Success", success: { statusCode: 200, body: "thanks" } })
    const received = got[got.length - 1]!
    expect(received.body).toBe(body)
    expect(await receiverAccepts("whsec_b", String(received.headers["x-service-timestamp"]), received.body, String(received.headers["x-service-signature"]))).toBe(true)
    expect(await receiverAccepts("whsec_c", String(received.headers["x-service-timestamp"]), received.body, String(received.headers["x-service-signature"]))).toBe(false)
  })

  it("gives up on a receiver that does not answer in time", async () => {
    const started = Date.now()
    const result = await send(`https://127.0.0.1:${port}/slow`, true, {}, "{}", 300)
    expect(result._tag === "Failure" && result.failure.reason).toMatch(/no complete answer within 0.3 s/)
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it("gives up on a receiver that trickles its answer: the deadline covers the whole attempt", async () => {
    const started = Date.now()
    const result = await send(`https://127.0.0.1:${port}/trickle`, true, {}, "{}", 400)
    const took = Date.now() - started
    expect(result._tag === "Failure" && result.failure.reason).toMatch(/^timed out: no complete answer within 0.4 s/)
    expect(took).toBeGreaterThanOrEqual(390)
    expect(took).toBeLessThan(1_500)
  })

  it("does not follow redirects", async () => {
    const result = await send(`https://127.0.0.1:${port}/redirect`, true)
    expect(result).toMatchObject({ _tag: "Success", success: { statusCode: 307 } })
  })

  it("refuses loopback targets, by address and by name, unless private targets are allowed", async () => {
    const before = got.length
    const byAddress = await send(`https://127.0.0.1:${port}/hook`, false)
    const byName = await send(`https://localhost:${port}/hook`, false)
    const mapped = await send(`https://[::ffff:127.0.0.1]:${port}/hook`, false)
    const decimal = await send(`https://2130706433:${port}/hook`, false)
    for (const result of [byAddress, byName, mapped, decimal]) {
      expect(result._tag).toBe("Failure")
      expect(result._tag === "Failure" && result.failure.reason).toMatch(/refused/)
    }
    expect(got.length).toBe(before)
    const plain = await send(`http://127.0.0.1:${port}/hook`, true)
    expect(plain._tag === "Failure" && plain.failure.reason).toMatch(/https URLs only/)
  })
})

describe("the bundled server sends job webhooks", () => {
  it("POSTs the signed completed and failed payloads to the job's webhookUrl", async () => {
    const tls = selfSignedCertificate()
    const dir = tempDataDir()
    writeFileSync(join(dir, "ca.pem"), tls.cert)
    const got: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = []
    const receiver = createServer(tls, (req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        got.push({ headers: req.headers, body })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    const hook = `https://localhost:${(receiver.address() as { port: number }).port}/hook`
    const server = await startServer({
      DATA_DIR: join(dir, "data"),
      ADMIN_TOKEN: "admin",
      WEBHOOK_ALLOW_PRIVATE: "1",
      NODE_EXTRA_CA_CERTS: join(dir, "ca.pem")
    })
    try {
      expect(server.output).toMatch(/WEBHOOK_ALLOW_PRIVATE is set/)
      const admin = { authorization: "Bearer admin", "content-type": "application/json" }
      const account = await (await fetch(`${server.url}/admin/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ name: "hooks", creditsMicroCents: 1_000_000 }) })).json()
      const key = (await (await fetch(`${server.url}/admin/accounts/${account.id}/keys`, { method: "POST", headers: admin, body: JSON.stringify({ name: "k" }) })).json()).key
      const submit = (input: Record<string, unknown>) =>
        fetch(`${server.url}/v1/jobs/submit`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "demo/image-gen/text-to-image", input: { prompt: "hook", width: 16, height: 16, ...input }, webhookUrl: hook })
        }).then((r) => r.json())
      const ok = await submit({})
      const bad = await submit({ demoFail: true })
      const deadline = Date.now() + 20_000
      while (got.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      expect(got).toHaveLength(2)
      const byJob = Object.fromEntries(got.map((g) => [JSON.parse(g.body).jobId, g]))
      for (const g of got) {
        expect(await receiverAccepts(account.webhookSecret, String(g.headers["x-service-timestamp"]), g.body, String(g.headers["x-service-signature"]))).toBe(true)
        expect(g.headers["user-agent"]).toMatch(/^genjobs-webhooks/)
        expect(g.headers["x-webhook-delivery-id"]).toMatch(/^whd_/)
      }
      expect(JSON.parse(byJob[ok.jobId]!.body)).toMatchObject({
        jobId: ok.jobId,
        requestId: ok.requestId,
        status: "completed",
        output: { type: "image", metadata: { width: 16, height: 16, format: "png" } }
      })
      expect(JSON.parse(byJob[bad.jobId]!.body)).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
    } finally {
      await server.stop("SIGKILL")
      receiver.close()
    }
  })
})
