import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { TestClock } from "effect/testing"
import type { IncomingHttpHeaders } from "node:http"
import { createServer } from "node:https"
import { Webhook } from "standardwebhooks"
import { makeNodeWebhookSender } from "../../adapters/webhooks/NodeWebhookSender.js"
import type { RequestId } from "../../src/domain/ids.js"
import { verifyWebhook } from "../../src/domain/webhookSignature.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { type WebhookRequest, type WebhookResponse, WebhookSender } from "../../src/ports/WebhookSender.js"
import { Admin } from "../../src/services/Admin.js"
import { Jobs } from "../../src/services/Jobs.js"
import { WebhookDispatcher } from "../../src/services/WebhookDispatcher.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"
import { finishing, textOutput } from "../support/providers.js"
import { selfSignedCertificate } from "../support/tls.js"

const text = finishing([textOutput("hi")])

const dispatching = (sender: WebhookSender["Service"]) =>
  WebhookDispatcher.layer.pipe(Layer.provideMerge(memoryEngine(text)), Layer.provideMerge(Layer.succeed(WebhookSender, sender)))

/** A caller whose account has Standard Webhooks on or off, and its job finished with a webhook to `url`. */
const finishedJob = (url: string, standardWebhooks: boolean) =>
  Effect.gen(function*() {
    const caller = yield* demoCaller()
    const account = standardWebhooks
      ? yield* (yield* Admin).updateAccount(caller.account.id, { standardWebhooks: true })
      : caller.account
    expect(account.standardWebhooks).toBe(standardWebhooks)
    const { job } = yield* (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "p" }, webhookUrl: url }, "req_s" as RequestId)
    yield* (yield* Worker).runOnce("w")
    const [delivery] = yield* (yield* WebhookDeliveryRepo).forJob(job.id)
    return { secret: account.webhookSecret, delivery: delivery! }
  })

/** The package's verifier, given the headers as a Node server reads them. */
const standardVerify = (secret: string, body: string, headers: IncomingHttpHeaders | Record<string, string>) =>
  new Webhook(secret, { format: "raw" }).verify(body, headers as Record<string, string>)

describe("Standard Webhooks, delivered to a local https receiver", () => {
  const tls = selfSignedCertificate()

  const received = <A, E, R>(body: (url: string, got: Array<{ headers: IncomingHttpHeaders; body: string }>) => Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.promise(() => {
        const got: Array<{ headers: IncomingHttpHeaders; body: string }> = []
        const server = createServer(tls, (req, res) => {
          let text = ""
          req.on("data", (chunk) => (text += chunk))
          req.on("end", () => {
            got.push({ headers: req.headers, body: text })
            res.writeHead(204).end()
          })
        })
        return new Promise<{ server: typeof server; got: typeof got }>((resolve) =>
          server.listen(0, "127.0.0.1", () => resolve({ server, got })))
      }),
      ({ got, server }) => body(`https://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got),
      ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    )

  const sender = makeNodeWebhookSender({ allowPrivate: true, ca: tls.cert })

  it.live("on: the standardwebhooks package verifies webhook-* with the account's secret; X-Service-* still verify", () =>
    received((url, got) =>
      Effect.gen(function*() {
        const { delivery, secret } = yield* finishedJob(url, true)
        expect(yield* (yield* WebhookDispatcher).deliverOnce("d")).toBe(true)
        expect(got).toHaveLength(1)
        const { body, headers } = got[0]!
        expect(body).toBe(delivery.payload)
        expect(standardVerify(secret, body, headers)).toEqual(JSON.parse(delivery.payload))
        expect(() => standardVerify(`${secret}x`, body, headers)).toThrow(/No matching signature/)
        expect(headers["webhook-id"]).toBe(delivery.id)
        expect(headers["webhook-id"]).toBe(headers["x-webhook-delivery-id"])
        expect(headers["webhook-timestamp"]).toBe(headers["x-service-timestamp"])
        expect(verifyWebhook({ secret, headers, body }).ok).toBe(true)
        expect(verifyWebhook({ secret, headers, body, standard: true })).toMatchObject({ ok: true, webhookId: delivery.id })
      }).pipe(Effect.provide(dispatching(sender)))))

  it.live("off (the default): no webhook-* header, the same X-Service-* headers and body", () =>
    received((url, got) =>
      Effect.gen(function*() {
        const { delivery, secret } = yield* finishedJob(url, false)
        expect(yield* (yield* WebhookDispatcher).deliverOnce("d")).toBe(true)
        expect(got).toHaveLength(1)
        const { body, headers } = got[0]!
        expect(body).toBe(delivery.payload)
        expect(Object.keys(headers).filter((h) => h.startsWith("webhook-"))).toEqual([])
        expect(verifyWebhook({ secret, headers, body }).ok).toBe(true)
        expect(() => standardVerify(secret, body, headers)).toThrow(/Missing required headers/)
      }).pipe(Effect.provide(dispatching(sender)))))
})

describe("Standard Webhooks across retries and rotations", () => {
  /** A receiver answering from a script; the clock starts at the wall clock's time, as the package checks timestamps against it. */
  const scripted = <A, E, R>(answers: ReadonlyArray<number>, body: (got: Ref.Ref<Array<WebhookRequest>>) => Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.now())
      const got = yield* Ref.make<Array<WebhookRequest>>([])
      const sender = WebhookSender.of({
        send: (request) =>
          Ref.updateAndGet(got, (all) => [...all, request]).pipe(
            Effect.map((all): WebhookResponse => ({ statusCode: answers[Math.min(all.length, answers.length) - 1]!, retryAfter: undefined, body: "" }))
          )
      })
      return yield* Effect.provide(body(got), dispatching(sender))
    })

  const drain = (seconds: number) =>
    Effect.gen(function*() {
      const dispatcher = yield* WebhookDispatcher
      for (let s = 0; s <= seconds; s++) {
        while (yield* dispatcher.deliverOnce("d")) { /* everything due now */ }
        yield* TestClock.adjust(1000)
      }
    })

  it.effect("every attempt of a delivery carries the same webhook-id and a fresh timestamp, each verifying", () =>
    scripted([500, 503, 200], (got) =>
      Effect.gen(function*() {
        const { delivery, secret } = yield* finishedJob("https://hooks.genjobs.test/in", true)
        yield* drain(10)
        const requests = yield* Ref.get(got)
        expect(requests).toHaveLength(3)
        expect(requests.map((r) => r.headers["webhook-id"])).toEqual([delivery.id, delivery.id, delivery.id])
        expect(new Set(requests.map((r) => r.headers["webhook-timestamp"])).size).toBe(3)
        for (const r of requests) {
          expect(r.headers["webhook-timestamp"]).toBe(r.headers["x-service-timestamp"])
          expect(standardVerify(secret, r.body, r.headers)).toEqual(JSON.parse(delivery.payload))
        }
      })))

  it.effect("during a rotation's overlap webhook-signature holds both signatures; the package accepts either secret", () =>
    scripted([200], (got) =>
      Effect.gen(function*() {
        const { delivery, secret } = yield* finishedJob("https://hooks.genjobs.test/in", true)
        const rotated = yield* (yield* Admin).rotateWebhookSecret(delivery.accountId, 60)
        yield* drain(0)
        const [request] = yield* Ref.get(got)
        expect(request!.headers["webhook-signature"]!.split(" ")).toHaveLength(2)
        expect(standardVerify(rotated.webhookSecret, request!.body, request!.headers)).toEqual(JSON.parse(delivery.payload))
        expect(standardVerify(secret, request!.body, request!.headers)).toEqual(JSON.parse(delivery.payload))
      })))
})
