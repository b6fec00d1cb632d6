/**
 * webhook_drain_{sqlite,pg}: how fast one process sends a backlog of webhooks, against how fast it
 * ran the jobs that wrote them. BENCH_WEBHOOK_DRAIN_JOBS (4,000) jobs with a `webhookUrl`,
 * submitted over 8 accounts, are drained by one engine's BENCH_DRAIN_CONCURRENCY (24) worker
 * fibers and the no-op provider (the reference, jobs/s); then the same process's default 16
 * webhook dispatcher slots send their deliveries to a sender that answers 200 at once (the
 * figure, deliveries/s), each account at most `webhookDeliveriesPerAccount` (4) in flight. Rates
 * from start to the last one done (the store polled every 20 ms on a connection of its own); CPU
 * per delivery of this process. A dispatcher claimed one delivery per transaction, under the
 * claims' lock on PostgreSQL: 555-577 deliveries/s there, 1,920 on SQLite (docs/decisions.md,
 * "A webhook claim takes every free slot's delivery at once"). The target: webhooks keep up with
 * the jobs that write them.
 */
import { Effect, Layer, Redacted, References } from "effect"
import { type Caller, Jobs, makeEngine, type StorePorts, WebhookSender } from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchModel } from "./catalog.js"
import { BENCH_PROVIDER, benchEngine, noopProvider, seed, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"

const POLL_MS = 20
const ACCOUNTS = 8
const DISPATCH_SLOTS = 16
const DELIVERIES = `${TABLE_PREFIX}webhook_deliveries`
const JOBS = `${TABLE_PREFIX}jobs`

/** Counts rows of the store on a connection of the bench's own. */
type Count = (query: string) => Promise<number>

const answersAtOnce = Layer.succeed(WebhookSender, {
  send: () => Effect.succeed({ statusCode: 200, retryAfter: undefined, body: "" })
})

const until = async (count: Count, query: string, done: (n: number) => boolean) => {
  while (!done(await count(query))) await new Promise((resolve) => setTimeout(resolve, POLL_MS))
}

const submitWithWebhooks = async (engine: Awaited<ReturnType<typeof benchEngine>>, callers: ReadonlyArray<Caller>, jobs: number) => {
  let next = 0
  const lane = async () => {
    while (next < jobs) {
      const i = next++
      await engine.run(Effect.flatMap(Jobs, (service) =>
        service.submit(
          callers[i % callers.length]!,
          { model: benchModel(BENCH_PROVIDER), input: { prompt: `w${i}` }, webhookUrl: "https://127.0.0.1/bench-hook" },
          `req_bench_webhook_${i}` as Parameters<typeof service.submit>[2]
        )))
    }
  }
  await Promise.all(Array.from({ length: 8 }, lane))
}

/** The jobs' drain (jobs/s), then their webhooks' (deliveries/s, CPU µs per delivery), on `store`. */
const measure = async (store: () => Layer.Layer<StorePorts, unknown>, count: Count) => {
  const jobs = settings.webhookDrainJobs
  const submitting = await benchEngine(store(), { workers: 0 })
  await submitWithWebhooks(submitting, await seed(submitting, ACCOUNTS), jobs)
  await submitting.dispose()

  let started = performance.now()
  const workers = await benchEngine(store(), { workers: settings.drainConcurrency })
  await until(count, `SELECT COUNT(*) AS n FROM ${JOBS} WHERE status IN ('pending', 'processing')`, (n) => n === 0)
  const jobsPerSecond = jobs / ((performance.now() - started) / 1000)
  await workers.dispose()

  const cpu = process.cpuUsage()
  started = performance.now()
  const dispatchers = await makeEngine({
    store: store(),
    files: memoryFiles({ publicUrl: "http://bench.invalid" }),
    providers: { [BENCH_PROVIDER]: noopProvider },
    workers: 0,
    webhookDispatchers: DISPATCH_SLOTS,
    webhookSender: answersAtOnce,
    uploadSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })
  await until(count, `SELECT COUNT(*) AS n FROM ${DELIVERIES} WHERE status = 'pending'`, (n) => n === 0)
  const deliveriesPerSecond = jobs / ((performance.now() - started) / 1000)
  const used = process.cpuUsage(cpu)
  await dispatchers.dispose()
  const sent = await count(`SELECT COUNT(*) AS n FROM ${DELIVERIES} WHERE status = 'sent'`)
  if (sent !== jobs) throw new Error(`webhook_drain: ${sent} of ${jobs} deliveries sent`)
  return { jobsPerSecond, deliveriesPerSecond, cpuUs: (used.user + used.system) / jobs }
}

const report = (store: string, m: Awaited<ReturnType<typeof measure>>) =>
  emit({
    figure: `webhook_drain_${store}`,
    engine: Math.round(m.deliveriesPerSecond),
    reference: Math.round(m.jobsPerSecond),
    unit: "per s",
    better: "higher",
    referenceIs: `the same process's drain of the jobs that wrote them (${settings.drainConcurrency} workers, no-op provider)`,
    target: ">= 1x: webhooks keep up with the jobs that write them",
    params: { jobs: settings.webhookDrainJobs, accounts: ACCOUNTS, slots: DISPATCH_SLOTS, cpuUsPerDelivery: Math.round(m.cpuUs) }
  })

const sqlite = async () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-webhook-drain-"))
  const filename = join(dir, "bench.db")
  let db: DatabaseSync | undefined
  try {
    report("sqlite", await measure(() => sqliteStore({ filename, tablePrefix: TABLE_PREFIX }), async (query) => {
      db ??= new DatabaseSync(filename)
      return Number((db.prepare(query).get() as { n: number }).n)
    }))
  } finally {
    db?.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const postgres = () =>
  withDatabase("webhook_drain", async (url, name) => {
    const client = await connect(name)
    try {
      report("pg", await measure(() => postgresStore({ url: Redacted.make(url), tablePrefix: TABLE_PREFIX }), async (query) =>
        Number((await client.query<{ n: string }>(query)).rows[0]!.n)))
    } finally {
      await client.end()
    }
  })

export const webhookDrain = async () => {
  log(`webhook_drain: SQLite, ${settings.webhookDrainJobs} jobs and their webhooks`)
  await sqlite()
  log(`webhook_drain: PostgreSQL, ${settings.webhookDrainJobs} jobs and their webhooks`)
  await postgres()
}
