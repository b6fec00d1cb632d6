/**
 * Probes of the PostgreSQL queue and admission path, one per mode; each makes its own database
 * on the server at PROBE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/test) and drops it.
 *
 *   tsx --conditions=genjobs-source bench/queue-probe.ts claim    time of one claim with 200,000 jobs pending
 *   tsx --conditions=genjobs-source bench/queue-probe.ts drain    15,000 no-op jobs, 2 processes x 24 workers
 *   tsx --conditions=genjobs-source bench/queue-probe.ts latency  pickup latency over 500 sequential jobs
 *   tsx --conditions=genjobs-source bench/queue-probe.ts submit   statements and time per submit
 */
import { Effect, Option, Redacted, Stream } from "effect"
import { fork } from "node:child_process"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { memoryFiles } from "../adapters/memory/parts.js"
import { postgresStore } from "../adapters/sql/postgres.js"
import type { RequestId } from "../src/domain/ids.js"
import { composeEngine, startEngine } from "../src/engine.js"
import type { GenerationProvider, ProviderOutput } from "../src/ports/Provider.js"
import { JobRepo } from "../src/ports/JobRepo.js"
import { Admin } from "../src/services/Admin.js"
import { Auth } from "../src/services/Auth.js"
import { Catalog } from "../src/services/Catalog.js"
import { Jobs } from "../src/services/Jobs.js"
import { demoCatalog } from "../test/support/demoCatalog.js"

const ADMIN_URL = process.env["PROBE_ADMIN_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const MODEL = "demo/text-gen/text-to-text"
const finished = (outputs: ReadonlyArray<ProviderOutput>) => ({ _tag: "Finished", status: { _tag: "Succeeded", outputs } }) as const
const noop: GenerationProvider = {
  start: () => Effect.succeed(finished([])),
  poll: () => Effect.die("the no-op provider finishes in its start"),
  cancel: () => Effect.void
}
/** Says when a worker started it, for the latency probe. */
const stamping: GenerationProvider = {
  ...noop,
  start: () =>
    Effect.sync(() =>
      finished([{
        type: "text",
        source: { _tag: "Bytes", body: Stream.make(new Uint8Array()), contentType: "text/plain" },
        metadata: { startedAt: Date.now() }
      }])
    )
}

const urlOf = (database: string) => Object.assign(new URL(ADMIN_URL), { pathname: `/${database}` }).toString()
const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  await client.query(text)
  await client.end()
}
const withDatabase = async (body: (url: string) => Promise<void>) => {
  const name = `genjobs_probe_${randomBytes(4).toString("hex")}`
  await admin(`CREATE DATABASE ${name}`)
  try {
    await body(urlOf(name))
  } finally {
    await admin(`DROP DATABASE ${name} WITH (FORCE)`)
  }
}

const engineAt = (url: string, workers: number, generator: GenerationProvider = noop) =>
  startEngine(composeEngine({
    store: postgresStore({ url: Redacted.make(url) }),
    files: memoryFiles({ publicUrl: "http://probe" }),
    providers: { demo: generator },
    workers,
    webhookDispatchers: 0,
    uploadSweeper: false
  }))

type Engine = Awaited<ReturnType<typeof engineAt>>

/** The demo catalog with every rate limit set to `limit` (0: none). */
const catalogLimitedTo = (limit: number) => {
  const catalog = demoCatalog()
  for (const model of catalog.models) {
    for (const version of model.versions) version.rateLimits = { requestsPerMinute: limit, requestsPerDay: limit }
  }
  return catalog
}

/** The demo catalog without rate limits, an account with ample credit and a caller for it. */
const callerOf = (engine: Engine) =>
  engine.run(Effect.gen(function*() {
    yield* (yield* Catalog).replace(catalogLimitedTo(0))
    const accounts = yield* Admin
    const account = yield* accounts.createAccount({
      name: "probe", creditsMicroCents: 1e15, maxConcurrentJobs: 1e9, segments: [], allowedModels: [], discounts: []
    })
    const key = yield* accounts.createKey(account.id, { name: "k", scopes: [], allowedIPs: [], expiresAt: null })
    return { caller: yield* (yield* Auth).authenticate({ authorization: `Bearer ${key.secret}` }), secret: key.secret }
  }))

const submitOne = (engine: Engine, caller: Awaited<ReturnType<typeof callerOf>>["caller"], key?: string) =>
  engine.run(Effect.flatMap(Jobs, (jobs) => jobs.submit(caller, { model: MODEL, input: { prompt: "p" } }, "req_probe" as RequestId, key)))

/**
 * `n` copies of one submitted job, inserted in one statement (with their charges left out), and
 * counted into the account's active jobs at once: with the per-row insert trigger on (migration
 * 0021) each copy would update the account's row again in the same transaction (bench/lib/pg.ts,
 * `copyJobRows`).
 */
const seedCopies = async (url: string, jobId: string, n: number) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query("BEGIN")
  await client.query("SET LOCAL session_replication_role = replica")
  await client.query(
    `INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, webhook_url, status, cost_micro_cents,
       created_at, estimated_completion_at, attempts)
     SELECT 'job_seed_' || lpad(g::text, 7, '0'), account_id, request_id, model, version, input, NULL, 'pending', 0,
       created_at + g, estimated_completion_at, 0
     FROM genjobs_jobs, generate_series(1, $2) g WHERE id = $1`,
    [jobId, n]
  )
  await client.query(
    `UPDATE genjobs_accounts SET active_jobs = active_jobs + $2 WHERE id = (SELECT account_id FROM genjobs_jobs WHERE id = $1)`,
    [jobId, n]
  )
  await client.query("COMMIT")
  await client.query("ANALYZE genjobs_jobs")
  await client.end()
}

const count = async (url: string, where: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const { rows } = await client.query(`SELECT COUNT(*)::int AS n FROM genjobs_jobs WHERE ${where}`)
  await client.end()
  return rows[0].n as number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** EXPLAIN ANALYZE of a claim statement (with $1 = now), rolled back. */
const explain = async (url: string, statement: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query("BEGIN")
  const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${statement}`, [Date.now()])
  await client.query("ROLLBACK")
  await client.end()
  console.log(rows.map((row) => row["QUERY PLAN"]).join("\n"))
}

const claim = () =>
  withDatabase(async (url) => {
    const engine = await engineAt(url, 0)
    const { caller } = await callerOf(engine)
    const first = await submitOne(engine, caller)
    await seedCopies(url, first.job.id, 200_000)
    const times: Array<number> = []
    for (let i = 0; i < 30; i++) {
      const start = performance.now()
      const claimed = await engine.run(Effect.flatMap(JobRepo, (repo) =>
        repo.claim({ workerId: "probe", now: Date.now(), leaseMs: 60_000, maxAttempts: 3 })))
      times.push(performance.now() - start)
      if (Option.isNone(claimed)) throw new Error("nothing claimed")
    }
    times.sort((a, b) => a - b)
    console.log(`claim with ${await count(url, "status = 'pending'")} pending: p50 ${percentile(times, 0.5).toFixed(2)} ms, max ${times.at(-1)!.toFixed(2)} ms`)
    if (process.env["PROBE_EXPLAIN"] !== undefined) await explain(url, process.env["PROBE_EXPLAIN"])
    await engine.dispose()
  })

/** A child process running `workers` workers until killed. */
const spawnWorkers = (url: string, workers: number, stamp = false) =>
  new Promise<ReturnType<typeof fork>>((resolve) => {
    const args = ["worker", url, String(workers), ...(stamp ? ["stamp"] : [])]
    const child = fork(new URL(import.meta.url).pathname, args, { execArgv: process.execArgv })
    child.on("message", () => resolve(child))
  })

const worker = async (url: string, workers: number, stamp: boolean) => {
  await engineAt(url, workers, stamp ? stamping : noop)
  process.send!("ready")
}

const drain = () =>
  withDatabase(async (url) => {
    const engine = await engineAt(url, 0)
    const { caller } = await callerOf(engine)
    const first = await submitOne(engine, caller)
    await seedCopies(url, first.job.id, 14_999)
    const total = await count(url, "status = 'pending'")
    const start = performance.now()
    const children = await Promise.all([spawnWorkers(url, 24), spawnWorkers(url, 24)])
    let done = 0
    while ((done = await count(url, "status = 'completed'")) < total) await new Promise((r) => setTimeout(r, 50))
    const seconds = (performance.now() - start) / 1000
    console.log(`drain: ${done} jobs in ${seconds.toFixed(2)} s = ${(done / seconds).toFixed(0)} jobs/s (2 processes x 24 workers, start-up included)`)
    for (const child of children) child.kill()
    await engine.dispose()
  })

const latency = () =>
  withDatabase(async (url) => {
    const engine = await engineAt(url, 0)
    const { caller } = await callerOf(engine)
    const children = [await spawnWorkers(url, 24, true)]
    // Let the worker process settle into waiting for jobs.
    await new Promise((r) => setTimeout(r, 1_000))
    const waits: Array<number> = []
    for (let i = 0; i < 500; i++) {
      const { job } = await submitOne(engine, caller)
      // From the commit of the submit to the generator's start in the worker process.
      const committed = Date.now()
      while (true) {
        const stored = Option.getOrThrow(await engine.run(Effect.flatMap(JobRepo, (repo) => repo.get(job.id))))
        if (stored.status === "completed") {
          waits.push((stored.outputs![0]!.metadata!["startedAt"] as number) - committed)
          break
        }
        await new Promise((r) => setTimeout(r, 2))
      }
    }
    waits.sort((a, b) => a - b)
    console.log(`pickup latency over ${waits.length} sequential jobs: p50 ${percentile(waits, 0.5)} ms, p99 ${percentile(waits, 0.99)} ms`)
    for (const child of children) child.kill()
    await engine.dispose()
  })

/** Counts the statements every pg client of this process sends (BEGIN and COMMIT included). */
const countStatements = () => {
  const counter = { n: 0 }
  const original = pg.Client.prototype.query
  pg.Client.prototype.query = function(this: pg.Client, ...args: Array<unknown>) {
    counter.n++
    return (original as (...a: Array<unknown>) => unknown).apply(this, args)
  } as typeof original
  return counter
}

const submit = () =>
  withDatabase(async (url) => {
    const counter = countStatements()
    const engine = await engineAt(url, 0)
    const { caller, secret } = await callerOf(engine)
    const n = 300
    const measure = async (label: string, op: (i: number) => Promise<unknown>) => {
      await op(-1)
      const before = counter.n
      const start = performance.now()
      for (let i = 0; i < n; i++) await op(i)
      const ms = performance.now() - start
      console.log(`${label.padEnd(44)} ${((counter.n - before) / n).toFixed(1)} statements, ${(ms / n).toFixed(2)} ms`)
    }
    await measure("submit, no rate limits", () => submitOne(engine, caller))
    await measure("submit with an Idempotency-Key", (i) => submitOne(engine, caller, `k${i}`))
    await measure("authenticate + submit (what an HTTP submit runs)", () =>
      engine.run(Effect.flatMap(Auth, (auth) => auth.authenticate({ authorization: `Bearer ${secret}` }))).then((c) => submitOne(engine, c)))
    await engine.run(Effect.flatMap(Catalog, (catalog) => catalog.replace(catalogLimitedTo(1_000_000_000))))
    await measure("submit, rate limits per minute and day", () => submitOne(engine, caller))
    await engine.dispose()
  })

const modes: Record<string, () => Promise<void>> = { claim, drain, latency, submit }
const [mode, ...rest] = process.argv.slice(2)
if (mode === "worker") await worker(rest[0]!, Number(rest[1]), rest[2] === "stamp")
else if (mode !== undefined && modes[mode] !== undefined) await modes[mode]!().then(() => process.exit(0))
else {
  console.error(`usage: queue-probe.ts ${Object.keys(modes).join("|")}`)
  process.exit(2)
}
