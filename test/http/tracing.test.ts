import { Layer } from "effect"
import { DEMO_PROVIDER_ID, makeDemoProvider, makeEngine, WebhookSender } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { layerLogger, layerOtlpTracing } from "genjobs/observability"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeRecordingWebhookSender } from "../../adapters/testing/RecordingWebhookSender.js"
import { demoCatalog } from "../support/demoCatalog.js"

const ORIGIN = "http://engine.test"
const ADMIN = "admin"

interface ReceivedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Record<string, unknown>
  readonly service: string | undefined
}

/** An OTLP/HTTP receiver for JSON exports, as a collector listens on :4318/v1/traces. */
const startReceiver = async () => {
  const spans: Array<ReceivedSpan> = []
  const requests: Array<{ path: string; contentType: string | undefined; headers: Record<string, unknown> }> = []
  const valueOf = (v: any): unknown =>
    v.stringValue ?? v.boolValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ??
      v.arrayValue?.values?.map(valueOf)
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: req.headers["content-type"], headers: req.headers })
      const data = JSON.parse(body)
      for (const resource of data.resourceSpans ?? []) {
        const service = resource.resource?.attributes?.find((a: any) => a.key === "service.name")?.value?.stringValue
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              name: span.name,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              attributes: Object.fromEntries((span.attributes ?? []).map((a: any) => [a.key, valueOf(a.value)])),
              service
            })
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, spans, requests, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces` }
}

describe("traces over OTLP/HTTP", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => {
    receiver?.server.close()
  })

  it("exports a submitted job's spans, from the request through claim, generation, completion and webhook", async () => {
    const webhooks = makeRecordingWebhookSender()
    const logs: Array<string> = []
    const engine = await makeEngine({
      store: memoryStore(),
      files: memoryFiles({ publicUrl: ORIGIN }),
      providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
      webhookSender: Layer.succeed(WebhookSender, webhooks.sender),
      http: { adminToken: ADMIN },
      workers: 1,
      settings: { pollIntervalMs: 50 },
      observability: Layer.merge(
        layerOtlpTracing({
          url: receiver.url,
          protocol: "http/json",
          serviceName: "genjobs-test",
          headers: { "x-collector-key": "k1" },
          exportIntervalMs: 100
        }),
        layerLogger({ format: "json", write: (line) => logs.push(line) })
      )
    })
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const response = await engine.fetch(new Request(`${ORIGIN}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }))
      return response.json() as Promise<any>
    }
    let jobId: string
    try {
      await call("PUT", "/admin/catalog", ADMIN, demoCatalog())
      const account = await call("POST", "/admin/accounts", ADMIN, { name: "t", creditsMicroCents: 10_000_000 })
      const key = (await call("POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })).key
      // The calls above ran in microtasks alone (memory stores), and Effect 4 starts forked fibers
      // on the event loop's next turns (setImmediate): let the worker's claimer run its first
      // claim, which finds the queue dry, so that its fiber is idle and offered to the submit.
      for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve))
      jobId = (await call("POST", "/v1/jobs/submit", key, {
        model: "demo/text-gen/text-to-text",
        input: { prompt: "traced" },
        webhookUrl: "https://hooks.genjobs.test/in"
      })).jobId
      const deadline = Date.now() + 10_000
      while (webhooks.sent.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      expect(webhooks.sent).toHaveLength(1)

      // Spans go out every 100 ms here: wait for the webhook's, the last of the job's life.
      while (!receiver.spans.some((s) => s.name === "genjobs.webhook.send") && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await engine.dispose()
    }

    const spans = receiver.spans
    const named = (name: string) => spans.filter((s) => s.name === name && s.attributes["genjobs.job_id"] === jobId)
    const lifecycle = ["genjobs.job.queued", "genjobs.job.claim", "genjobs.provider.start", "genjobs.job.complete", "genjobs.webhook.send"]
    for (const name of ["genjobs.job.submit", ...lifecycle]) {
      expect(named(name), name).toHaveLength(1)
    }
    // The demo provider is polled until its generation is due: once or more.
    expect(named("genjobs.provider.poll").length).toBeGreaterThanOrEqual(1)
    const submit = named("genjobs.job.submit")[0]!
    // The admission is a step of the use case Jobs.submit, itself a child of the request's span.
    const useCase = spans.find((s) => s.spanId === submit.parentSpanId)
    expect(useCase).toMatchObject({ name: "Jobs.submit", traceId: submit.traceId })
    const http = spans.find((s) => s.spanId === useCase!.parentSpanId)
    expect(http).toMatchObject({ name: "http.server POST", attributes: { "http.route": "/v1/jobs/submit", "http.response.status_code": 200 } })
    // In one process the job's later spans join the trace of its submit.
    for (const name of lifecycle) {
      expect(named(name)[0]).toMatchObject({ traceId: submit.traceId, parentSpanId: submit.spanId })
    }
    // The worker was idle: the submit handed the job to it, and that write is the claim's span.
    expect(named("genjobs.job.claim")[0]!.attributes).toMatchObject({ "genjobs.handed_off": true, "genjobs.attempt": 1 })
    // Claims that found no job leave no span.
    expect(spans.filter((s) => s.name === "genjobs.job.claim").every((s) => s.attributes["genjobs.job_id"] !== undefined)).toBe(true)
    expect(named("genjobs.webhook.send")[0]!.attributes).toMatchObject({ "http.response.status_code": 200, "server.address": "hooks.genjobs.test" })
    expect(spans.every((s) => s.service === "genjobs-test")).toBe(true)
    expect(receiver.requests.every((r) => r.path === "/v1/traces" && r.contentType === "application/json")).toBe(true)
    expect(receiver.requests[0]!.headers["x-collector-key"]).toBe("k1")
    // Log lines written inside a span name its trace.
    const submitted = logs.map((l) => JSON.parse(l)).find((l) => l.msg === "job submitted")
    expect(submitted).toMatchObject({ jobId, traceId: submit.traceId })
  })
})
