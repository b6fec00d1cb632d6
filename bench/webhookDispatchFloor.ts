/**
 * webhook_dispatch_floor: a webhook dispatcher's own work per delivery, with no store and no
 * receiver: `WebhookDispatcher.start`'s loop (src/services/webhookDispatch/start.ts, its 16 slots,
 * claims, runners, deadline keeper and holds) over BENCH_WEBHOOK_FLOOR_DELIVERIES deliveries
 * (20,000) whose claim answers on the next turn of the event loop, whose sender answers 200 at
 * once and whose record is a no-op. What is left is the dispatcher: the Effect runtime, the
 * attempt's signature and headers, its record's outcome and schedule. CPU per delivery of this
 * process (`process.cpuUsage`, user + system), the median of 5 rounds after a warm-up round: a
 * webhook_drain on SQLite or PostgreSQL adds its store's work to it. No reference: it says what
 * the deliveries themselves leave for the store. With a fiber per attempt and a race for its
 * deadline, 36-41 µs; on runner fibers with the deadlines as data, 21-24 (docs/decisions.md,
 * "Webhook attempts on runner fibers, their deadlines as data").
 */
import { Effect, Exit, Option, Scope } from "effect"
import type { WebhookDelivery } from "../src/domain/webhook.js"
import type { WebhookDeliveryRepo } from "../src/ports/WebhookDeliveryRepo.js"
import { defaultEngineSettings } from "../src/services/EngineConfig.js"
import type { DispatchDeps } from "../src/services/webhookDispatch/deps.js"
import { start } from "../src/services/webhookDispatch/start.js"
import { emit, log } from "./lib/report.js"

const DELIVERIES = Number(process.env.BENCH_WEBHOOK_FLOOR_DELIVERIES ?? 20_000)
const ROUNDS = 5
const SLOTS = 16

const delivery = (i: number): WebhookDelivery => ({
  id: `whd_${i}`,
  jobId: `job_${i}`,
  accountId: "acc_bench",
  url: "https://127.0.0.1/bench-hook",
  payload: "{\"jobId\":\"job\"}",
  status: "pending",
  attempts: [],
  nextAttemptAt: 0,
  leaseOwner: "whd_bench",
  leaseExpiresAt: 60_000,
  createdAt: 0
})

/** One dispatcher sending `n` deliveries: µs of this process's CPU per delivery, and the wall time. */
const round = async (n: number) => {
  let claimed = 0
  let recorded = 0
  let allRecorded: () => void = () => {}
  const done = new Promise<void>((resolve) => (allRecorded = resolve))
  const deliveries = {
    nextAttemptAfter: () => Effect.succeed(Option.none<number>()),
    recordAttempt: () =>
      Effect.sync(() => {
        if (++recorded === n) allRecorded()
        return true
      })
  } as Partial<WebhookDeliveryRepo["Service"]> as WebhookDeliveryRepo["Service"]
  const deps: DispatchDeps = {
    deliveries,
    signingAccount: () => Effect.succeed(Option.none()),
    sender: { send: () => Effect.succeed({ statusCode: 200, retryAfter: undefined, body: "" }) },
    signal: { notify: Effect.void, wait: (ms) => Effect.sleep(ms) },
    config: { ...defaultEngineSettings, pollIntervalMs: 50 },
    leaseMs: 60_000,
    // A store's claim answers after a round trip: here the next turn of the event loop.
    claim: (_workerId, limit) =>
      Effect.promise(() =>
        new Promise<ReadonlyArray<WebhookDelivery>>((resolve) =>
          setImmediate(() => {
            const taken = Math.min(limit, n - claimed)
            resolve(Array.from({ length: taken }, () => delivery(claimed++)))
          })
        )
      )
  }
  const scope = Effect.runSync(Scope.make())
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Effect.runPromise(Scope.provide(start(deps)(SLOTS), scope))
  await done
  const used = process.cpuUsage(cpu)
  const ms = performance.now() - started
  await Effect.runPromise(Scope.close(scope, Exit.void))
  return { cpuUs: (used.user + used.system) / n, ms }
}

export const webhookDispatchFloor = async () => {
  log(`webhook_dispatch_floor: ${DELIVERIES} deliveries through one dispatcher of ${SLOTS} slots, no store, ${ROUNDS} rounds`)
  await round(DELIVERIES)
  const rounds: Array<Awaited<ReturnType<typeof round>>> = []
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(DELIVERIES))
  const byCpu = [...rounds].sort((a, b) => a.cpuUs - b.cpuUs)
  const median = byCpu[Math.floor(ROUNDS / 2)]!
  emit({
    figure: "webhook_dispatch_floor",
    engine: Math.round(median.cpuUs * 10) / 10,
    reference: null,
    unit: "µs CPU/delivery",
    better: "lower",
    referenceIs: "none: the dispatcher's own work per delivery in one process (no store, no receiver)",
    params: {
      deliveries: DELIVERIES,
      slots: SLOTS,
      rounds: ROUNDS,
      deliveriesPerSecond: Math.round(DELIVERIES / (median.ms / 1000)),
      roundsCpuUsPerDelivery: rounds.map((r) => Math.round(r.cpuUs * 10) / 10)
    }
  })
}
