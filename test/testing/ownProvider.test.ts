import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, beforeEach, expect, test } from "vitest"
import { makeTestEngine, testCatalog, TINY_PNG } from "genjobs/testing"
import { makeAcmeProvider } from "../../examples/ownProvider.js"

/** The made-up acme API of docs/providers.md: a job runs for one poll, then its picture is ready. */
const received: Array<{ method: string; url: string; body: any; auth: string | undefined }> = []
const bodyOf = (req: IncomingMessage) =>
  new Promise<any>((resolve) => {
    let text = ""
    req.on("data", (chunk) => (text += chunk))
    req.on("end", () => resolve(text === "" ? undefined : JSON.parse(text)))
  })
const acme = createServer(async (req, res) => {
  received.push({ method: req.method!, url: req.url!, body: await bodyOf(req), auth: req.headers.authorization })
  const polls = received.filter((r) => r.method === "GET" && r.url === "/jobs/a1").length
  if (req.method === "POST" && req.url === "/jobs") return res.end(JSON.stringify({ id: "a1" }))
  if (req.url === "/jobs/a1") {
    return res.end(JSON.stringify(polls === 1 ? { status: "running" } : { status: "done", url: `${base}/files/a1.png` }))
  }
  if (req.url === "/files/a1.png") return res.writeHead(200, { "content-type": "image/png" }).end(TINY_PNG)
  res.writeHead(404).end()
})
let base = ""
beforeEach(() => new Promise<void>((resolve) => acme.listen(0, "127.0.0.1", () => {
  base = `http://127.0.0.1:${(acme.address() as AddressInfo).port}`
  resolve()
})))
afterEach(() => new Promise<void>((resolve) => acme.close(() => resolve())))

test("a provider of your own (docs/providers.md) runs a job: start, poll, output fetched from its URL", async () => {
  const image = testCatalog.models.find((m) => m.slug === "test/image")!
  const engine = await makeTestEngine({
    catalog: {
      ...testCatalog,
      providers: [...testCatalog.providers, { ...testCatalog.providers[0]!, id: "acme", name: "Acme" }],
      models: [{
        ...image,
        slug: "acme/pictures",
        providerId: "acme",
        versions: [{ ...image.versions[0]!, provider: { model: "pictures-v2", input: { text: "$.prompt", size: 256 } } }]
      }]
    },
    providers: { acme: { ...makeAcmeProvider(base, "acme-key"), pollIntervalMs: 10 } },
    // The made-up API serves its picture from 127.0.0.1: an explicit opt-in past the address guard.
    settings: { providerOutputAllowPrivate: true }
  })
  try {
    const alice = await engine.account()
    const { jobId } = await alice.submit("acme/pictures", { prompt: "a fox" })
    await engine.runJobs()
    const job = await alice.get(jobId)
    expect(job).toMatchObject({ status: "completed", outputs: [{ type: "image", contentType: "image/png" }] })
    expect(new Uint8Array(await (await engine.fetch(new Request(job.output!))).arrayBuffer())).toEqual(TINY_PNG)
    expect(received.map((r) => `${r.method} ${r.url}`)).toEqual(["POST /jobs", "GET /jobs/a1", "GET /jobs/a1", "GET /files/a1.png"])
    expect(received[0]).toMatchObject({ auth: "Bearer acme-key", body: { model: "pictures-v2", input: { text: "a fox", size: 256 }, key: jobId } })
  } finally {
    await engine.dispose()
  }
})
