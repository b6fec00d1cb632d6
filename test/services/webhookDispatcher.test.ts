import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Fiber, Layer, Option, Redacted, Ref, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import type { layerMemoryStores } from "../../adapters/memory/layer.js"
import { freshPostgresUrl } from "../support/postgres.js"
import type { RequestId } from "../../src/domain/ids.js"
import { verifyWebhook } from "../../src/domain/webhookSignature.js"
import { finishing, textOutput } from "../support/providers.js"
import { StoreChanges } from "../../src/ports/StoreChanges.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { type WebhookRequest, type WebhookResponse, WebhookNotDelivered, WebhookSender } from "../../src/ports/WebhookSender.js"
import { Admin } from "../../src/services/Admin.js"
import { Jobs } from "../../src/services/Jobs.js"
import { WebhookDispatcher } from "../../src/services/WebhookDispatcher.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, engineOver, memoryEngine } from "../support/engineLayer.js"

const text = finishing([textOutput("hi")])
const postgresUrl = await freshPostgresUrl()

/** A receiver that answers from a script and remembers what it got and when. */
const scriptedReceiver = (answers: ReadonlyArray<WebhookResponse | "no answer">) =>
  Effect.gen(function*() {
    const received = yield* Ref.make<Array<{ at: number; request: WebhookRequest }>>([])
    const sender = WebhookSender.of({
      send: (request) =>
        Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          const seen = yield* Ref.updateAndGet(received, (all) => [...all, { at, request }])
          const answer = answers[Math.min(seen.length - 1, answers.length - 1)]!
          return answer === "no answer"
            ? yield* Effect.fail(new WebhookNotDelivered({ reason: "connect ECONNREFUSED" }))
            : answer
        })
    })
    return { received, sender }
  })

const status = (statusCode: number, retryAfter?: string): WebhookResponse => ({ statusCode, retryAfter, body: `status ${statusCode}` })

const dispatching = <E>(engine: Layer.Layer<Layer.Success<ReturnType<typeof memoryEngine>>, E>, sender: WebhookSender["Service"]) =>
  WebhookDispatcher.layer.pipe(Layer.provideMerge(engine), Layer.provideMerge(Layer.succeed(WebhookSender, sender)))

type Received = Ref.Ref<Array<{ at: number; request: WebhookRequest }>>
type Services = Layer.Success<ReturnType<typeof dispatching>>

const withReceiver = <A, E>(answers: ReadonlyArray<WebhookResponse | "no answer">, body: (received: Received) => Effect.Effect<A, E, Services>) =>
  Effect.gen(function*() {
    const { received, sender } = yield* scriptedReceiver(answers)
    return yield* Effect.provide(body(received), dispatching(memoryEngine(text), sender))
  })

/** Submits a job with a webhook and runs it, so its delivery is due. */
const finishedJobOf = (caller: Effect.Success<ReturnType<typeof demoCaller>>) => Effect.gen(function*() {
  const { job } = yield* (yield* Jobs).submit(
    caller,
    { model: "demo/text-gen/text-to-text", input: { prompt: "p" }, webhookUrl: "https://hooks.genjobs.test/in" },
    "req_w" as RequestId
  )
  yield* (yield* Worker).runOnce("w")
  return { job, caller }
})
const finishedJob = Effect.flatMap(demoCaller(), finishedJobOf)

/** Whether the request carries a valid signature for `secret`. */
const signedBy = (r: WebhookRequest, secret: string) =>
  verifyWebhook({ secret, headers: r.headers, body: r.body, nowSeconds: Number(r.headers["x-service-timestamp"]) }).ok

/** Runs the dispatcher until nothing is due, moving the clock to each next attempt. */
const drain = (until: number) =>
  Effect.gen(function*() {
    const dispatcher = yield* WebhookDispatcher
    for (let now = 0; now <= until; now += 1000) {
      while (yield* dispatcher.deliverOnce("d")) { /* everything due now */ }
      yield* TestClock.adjust(1000)
    }
  })

describe("webhook dispatcher", () => {
  it.effect("walks the whole schedule: attempts at 0, 1, 5, 21, 85 and 341 s, then failed", () =>
    withReceiver([status(500)], (received) =>
      Effect.gen(function*() {
        const { job } = yield* finishedJob
        yield* drain(400_000)
        const times = (yield* Ref.get(received)).map((r) => r.at / 1000)
        expect(times).toEqual([0, 1, 5, 21, 85, 341])
        const [delivery] = yield* (yield* WebhookDeliveryRepo).forJob(job.id)
        expect(delivery).toMatchObject({ status: "failed", nextAttemptAt: null })
        expect(delivery!.attempts.map((a) => [a.attempt, a.statusCode, a.error])).toEqual(
          [1, 2, 3, 4, 5, 6].map((n) => [n, 500, "HTTP 500"])
        )
        expect(delivery!.attempts[0]!.responseBody).toBe("status 500")
      })))

  it.effect("stops at the first 2xx and signs every attempt for the account's secret", () =>
    withReceiver(["no answer", status(302), status(204)], (received) =>
      Effect.gen(function*() {
        const { caller, job } = yield* finishedJob
        yield* drain(30_000)
        const requests = (yield* Ref.get(received)).map((r) => r.request)
        expect(requests).toHaveLength(3)
        const [delivery] = yield* (yield* WebhookDeliveryRepo).forJob(job.id)
        expect(delivery!.status).toBe("sent")
        expect(delivery!.attempts.map((a) => a.error)).toEqual(["connect ECONNREFUSED", "HTTP 302", null])
        for (const [i, r] of requests.entries()) {
          expect(r.url).toBe("https://hooks.genjobs.test/in")
          expect(r.headers["x-webhook-delivery-id"]).toBe(delivery!.id)
          expect(r.headers["x-webhook-attempt"]).toBe(String(i + 1))
          expect(r.headers["user-agent"]).toMatch(/^genjobs-webhooks/)
          expect(r.body).toBe(requests[0]!.body)
          const verdict = verifyWebhook({
            secret: caller.account.webhookSecret,
            headers: r.headers,
            body: r.body,
            nowSeconds: Number(r.headers["x-service-timestamp"])
          })
          expect(verdict.ok).toBe(true)
        }
        expect(JSON.parse(requests[0]!.body)).toMatchObject({ jobId: job.id, requestId: "req_w", status: "completed" })
      })))

  it.effect("honours Retry-After on 429 and 503 within the schedule's bounds", () =>
    withReceiver([status(429, "30"), status(503, "100000"), status(500, "2"), status(200)], (received) =>
      Effect.gen(function*() {
        yield* finishedJob
        yield* drain(400_000)
        expect((yield* Ref.get(received)).map((r) => r.at / 1000)).toEqual([0, 30, 286, 302])
      })))

  it.effect("signs with both secrets during a rotation's overlap, then with the new one only", () =>
    withReceiver([status(200)], (received) =>
      Effect.gen(function*() {
        const { caller } = yield* finishedJob
        const rotated = yield* (yield* Admin).rotateWebhookSecret(caller.account.id, 60)
        expect(rotated.previousWebhookSecret).toBe(caller.account.webhookSecret)
        yield* drain(0)
        const [during] = (yield* Ref.get(received)).map((r) => r.request)
        expect(during!.headers["x-service-signature"]!.split(",")).toHaveLength(2)
        expect([signedBy(during!, rotated.webhookSecret), signedBy(during!, caller.account.webhookSecret)]).toEqual([true, true])
        yield* TestClock.adjust(61_000)
        yield* finishedJobOf(caller)
        yield* drain(0)
        const after = (yield* Ref.get(received)).map((r) => r.request)[1]!
        expect([signedBy(after, rotated.webhookSecret), signedBy(after, caller.account.webhookSecret)]).toEqual([true, false])
      })))

  /** A receiver that takes ten minutes and ignores interruption: only the dispatcher's own deadline can bound it. */
  const stubbornReceiver = Effect.gen(function*() {
    const received = yield* Ref.make<Array<{ at: number; attempt: string }>>([])
    const sender = WebhookSender.of({
      send: (request) =>
        Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          yield* Ref.update(received, (all) => [...all, { at, attempt: request.headers["x-webhook-attempt"]! }])
          yield* Effect.sleep("10 minutes")
          return status(200)
        }).pipe(Effect.uninterruptible)
    })
    return { received, sender }
  })

  it.effect("bounds any sender by the deadline: two dispatchers, six attempts each sent once, then failed", () =>
    Effect.gen(function*() {
      const { received, sender } = yield* stubbornReceiver
      const context = yield* Layer.build(dispatching(memoryEngine(text), sender))
      const { job } = yield* Effect.provide(finishedJob, context)
      yield* Effect.provide(WebhookDispatcher.use((d) => d.start(2)), context)
      for (let s = 0; s < 600; s++) yield* TestClock.adjust(1000)
      // Each attempt is cut off at 30 s, then the schedule's 1, 4, 16, 64 and 256 s follow.
      expect((yield* Ref.get(received)).map((r) => [r.at / 1000, r.attempt])).toEqual(
        [[0, "1"], [31, "2"], [65, "3"], [111, "4"], [205, "5"], [491, "6"]]
      )
      const [delivery] = yield* Effect.provide(WebhookDeliveryRepo.use((r) => r.forJob(job.id)), context)
      expect(delivery).toMatchObject({ status: "failed", leaseOwner: null })
      expect(delivery!.attempts.map((a) => [a.attempt, a.durationMs, a.statusCode])).toEqual(
        [1, 2, 3, 4, 5, 6].map((n) => [n, 30_000, null])
      )
      expect(delivery!.attempts[0]!.error).toMatch(/^timed out: no complete answer within 30 s/)
    }))

  it.effect("records an attempt once: a sender that outlives the lease does not record over the new lease holder", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const sender = WebhookSender.of({ send: () => Effect.as(Deferred.await(gate), status(500)) })
      yield* Effect.provide(
        Effect.gen(function*() {
          const { job } = yield* finishedJob
          const repo = yield* WebhookDeliveryRepo
          const stale = yield* Effect.forkChild((yield* WebhookDispatcher).deliverOnce("d1"))
          yield* TestClock.adjust(10)
          // Another dispatcher whose clock runs a lease ahead takes the delivery over meanwhile.
          const [leased] = yield* repo.forJob(job.id)
          const taken = yield* repo.claimDue({ workerId: "d2", now: leased!.leaseExpiresAt!, leaseMs: 60_000, maxPerAccount: 4, limit: 1 })
          expect(taken.map((d) => d.id)).toEqual([leased!.id])
          yield* Deferred.succeed(gate, undefined)
          expect(yield* Fiber.join(stale)).toBe(true)
          expect((yield* repo.forJob(job.id))[0]!.attempts).toEqual([])
          const attempt = { attempt: 1, at: 0, statusCode: 204, error: null, durationMs: 5, responseBody: null }
          expect(yield* repo.recordAttempt(leased!.id, taken[0]!.leaseOwner!, attempt, { status: "sent" })).toBe(true)
          expect((yield* repo.forJob(job.id))[0]).toMatchObject({ status: "sent", attempts: [attempt] })
        }),
        dispatching(memoryEngine(text), sender)
      )
    }))

  it.effect("starts at once when a job with a webhookUrl ends, and retries when the retry falls due", () =>
    Effect.gen(function*() {
      const { received, sender } = yield* scriptedReceiver([status(500), status(200)])
      // A poll interval far longer than the test: only the signal and the due time can start attempts.
      const context = yield* Layer.build(dispatching(memoryEngine(text, { pollIntervalMs: 3_600_000 }), sender))
      yield* Effect.provide(WebhookDispatcher.use((d) => d.start(4)), context)
      yield* TestClock.adjust(5_000)
      yield* Effect.provide(finishedJob, context)
      yield* TestClock.adjust(0)
      expect((yield* Ref.get(received)).map((r) => r.at)).toEqual([5_000])
      yield* TestClock.adjust(999)
      expect(yield* Ref.get(received)).toHaveLength(1)
      yield* TestClock.adjust(1)
      expect((yield* Ref.get(received)).map((r) => r.at)).toEqual([5_000, 6_000])
    }))

  type Stores = Layer.Layer<Layer.Success<typeof layerMemoryStores>, unknown>
  // Without a PostgreSQL server its case is skipped, and shows as skipped (under CI a missing
  // server fails the file: see support/postgres.ts).
  const restartStores: Array<[string, (() => Stores) | undefined]> = [
    ["SQLite", () => layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "genjobs-webhooks-")), "store.db") })],
    ["PostgreSQL", postgresUrl === undefined ? undefined : () => layerPostgres({ url: Redacted.make(postgresUrl) })]
  ]
  // The SQL stores tell of changes to accounts, so the dispatcher caches the account it signs for:
  // a rotation must still reach the next attempt's signature.
  for (const [storeName, makeStore] of restartStores) {
    it.live.skipIf(makeStore === undefined)(`signs the attempt after a rotation with the new secret only, on ${storeName}`, () =>
      Effect.gen(function*() {
        const { received, sender } = yield* scriptedReceiver([status(200)])
        const context = yield* Layer.build(dispatching(engineOver(makeStore!(), text), sender))
        yield* Effect.provide(
          Effect.gen(function*() {
            const dispatcher = yield* WebhookDispatcher
            const { caller } = yield* finishedJob
            expect(yield* dispatcher.deliverOnce("d")).toBe(true)
            const rotated = yield* (yield* Admin).rotateWebhookSecret(caller.account.id, 0)
            yield* finishedJobOf(caller)
            expect(yield* dispatcher.deliverOnce("d")).toBe(true)
            const [before, after] = (yield* Ref.get(received)).map((r) => r.request)
            expect([signedBy(before!, caller.account.webhookSecret), signedBy(after!, caller.account.webhookSecret)]).toEqual([true, false])
            expect(signedBy(after!, rotated.webhookSecret)).toBe(true)
          }),
          context
        )
      }).pipe(Effect.scoped))
  }

  it.live.skipIf(postgresUrl === undefined)("signs with a secret another process rotated once the change is heard, on PostgreSQL", () =>
    Effect.gen(function*() {
      const store = () => layerPostgres({ url: Redacted.make(postgresUrl!) })
      const { received, sender } = yield* scriptedReceiver([status(200)])
      // Two process lifetimes at once over one database: each its own pool, LISTEN connection and caches.
      const dispatcherProcess = yield* Layer.build(dispatching(engineOver(store(), text), sender))
      const adminProcess = yield* Layer.build(engineOver(store(), text))
      const { caller } = yield* Effect.provide(finishedJob, dispatcherProcess)
      yield* Effect.provide(Effect.flatMap(WebhookDispatcher, (d) => d.deliverOnce("d")), dispatcherProcess)
      // The dispatcher process's own change hints: PostgreSQL's stores provide them beside the ports.
      const changes = Option.getOrThrow(yield* Effect.provide(Effect.serviceOption(StoreChanges), dispatcherProcess))
      const heard = changes.generation("access")
      const rotated = yield* Effect.provide(Effect.flatMap(Admin, (a) => a.rotateWebhookSecret(caller.account.id, 0)), adminProcess)
      // Within the change signal's delay (PgStoreChanges), well before a cached account's 5 s age.
      yield* Effect.suspend(() => changes.generation("access") === heard ? Effect.fail("not heard yet") : Effect.void).pipe(
        Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 100 })
      )
      yield* Effect.provide(finishedJobOf(caller), dispatcherProcess)
      yield* Effect.provide(Effect.flatMap(WebhookDispatcher, (d) => d.deliverOnce("d")), dispatcherProcess)
      const after = (yield* Ref.get(received)).map((r) => r.request)[1]!
      expect([signedBy(after, rotated.webhookSecret), signedBy(after, caller.account.webhookSecret)]).toEqual([true, false])
    }).pipe(Effect.scoped))

  for (const [storeName, makeStore] of restartStores) {
    it.live.skipIf(makeStore === undefined)(`resumes on time after a restart: pending deliveries live in ${storeName}`, () =>
      Effect.gen(function*() {
        const store = makeStore!()
        const { received, sender } = yield* scriptedReceiver([status(500), status(200)])
        // The same store, built twice: two process lifetimes.
        const lifetime = () => dispatching(engineOver(store, text), sender)
        const jobId = yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(lifetime())
          return yield* Effect.provide(
            Effect.gen(function*() {
              const { job } = yield* finishedJob
              expect(yield* (yield* WebhookDispatcher).deliverOnce("before-restart")).toBe(true)
              return job.id
            }),
            context
          )
        }))
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(lifetime())
          yield* Effect.provide(
            Effect.gen(function*() {
              const dispatcher = yield* WebhookDispatcher
              const repo = yield* WebhookDeliveryRepo
              const [pending] = yield* repo.forJob(jobId)
              expect(pending).toMatchObject({ status: "pending", attempts: [expect.objectContaining({ statusCode: 500 })] })
              expect(yield* dispatcher.deliverOnce("after-restart")).toBe(false)
              yield* Effect.sleep(Duration.millis(Math.max(0, pending!.nextAttemptAt! - Date.now() + 20)))
              expect(yield* dispatcher.deliverOnce("after-restart")).toBe(true)
              expect((yield* Ref.get(received))).toHaveLength(2)
              expect((yield* repo.forJob(jobId))[0]!.status).toBe("sent")
            }),
            context
          )
        }))
      }))
  }
})
