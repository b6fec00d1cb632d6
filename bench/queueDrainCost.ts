/**
 * What queue_drain's engine side costs PostgreSQL, per job (a measuring aid, not a figure): drains
 * BENCH_DRAIN_JOBS jobs as queue_drain does (same submit, same worker processes) and prints one
 * JSON line: transactions and tuples from pg_stat_database (its own 20 ms polls included: `polls`),
 * the CPU of the worker processes and of their PostgreSQL backends (from /proc, so the server
 * must run on this machine), per job. With BENCH_DRAIN_COUNT=1 each worker prints the statements
 * it sent by their first words when it stops. BENCH_DRAIN_COST_QUEUE=redis drains through Redis
 * (BENCH_REDIS_URL) under a prefix of the run's own, deleted afterwards. Run:
 * `npx tsx --conditions=genjobs-source bench/queueDrainCost.ts`.
 */
import { randomBytes } from "node:crypto"
import { deleteRedisKeys } from "./bullmq.js"
import { forkTs, goAll, readyAll, stopAll } from "./lib/child.js"
import { processCpuMs } from "./lib/cpu.js"
import { seed, submitMany } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { type DrainQueue, engineDrained, startDrainEngine } from "./queueDrain.js"

const n = settings.drainJobs
const queue: DrainQueue = process.env.BENCH_DRAIN_COST_QUEUE === "redis"
  ? { kind: "redis", url: settings.redisUrl, prefix: `bench_redis_${randomBytes(4).toString("hex")}_` }
  : { kind: "store" }
await withDatabase("draincost", async (url, name) => {
  const engine = await startDrainEngine(url, 0, queue)
  try {
    await submitMany(engine, await seed(engine, settings.drainAccounts), n, 16)
  } finally {
    await engine.dispose()
  }
  const client = await connect(name)
  const stat = async () =>
    (await client.query(`SELECT xact_commit::int, xact_rollback::int, tup_inserted::int, tup_updated::int, tup_deleted::int, tup_returned::bigint, tup_fetched::bigint FROM pg_stat_database WHERE datname = $1`, [name])).rows[0]
  await new Promise((r) => setTimeout(r, 1200))
  const before = await stat()
  const children = Array.from({ length: settings.drainProcesses }, () =>
    forkTs("queueDrainWorker.ts", {
      BENCH_DATABASE_URL: url,
      BENCH_CONCURRENCY: String(settings.drainConcurrency),
      BENCH_DRAIN_QUEUE: JSON.stringify(queue)
    }))
  await readyAll(children)
  const c0 = children.map((c) => processCpuMs(c.pid!))
  const start = performance.now()
  await goAll(children)
  let polls = 0
  await waitFor("drain", () => {
    polls++
    return engineDrained(client)
  }, 20, 600_000)
  const seconds = (performance.now() - start) / 1000
  const backends = (await client.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name])).rows.map((r) => r.pid as number)
  const backendMs = backends.reduce((s, pid) => s + processCpuMs(pid), 0)
  const workerMs = children.reduce((s, c, i) => s + processCpuMs(c.pid!) - c0[i]!, 0)
  await stopAll(children)
  await new Promise((r) => setTimeout(r, 1500))
  const after = await stat()
  await client.end()
  const per = (k: string) => Math.round(((after[k] - before[k]) / n) * 1000) / 1000
  console.log(JSON.stringify({
    jobs: n, seconds: Math.round(seconds * 1000) / 1000, jobsPerSecond: Math.round(n / seconds), polls,
    xactPerJob: per("xact_commit"), rollbackPerJob: per("xact_rollback"), insertedPerJob: per("tup_inserted"), updatedPerJob: per("tup_updated"),
    deletedPerJob: per("tup_deleted"), returnedPerJob: per("tup_returned"), fetchedPerJob: per("tup_fetched"),
    workerCpuMsPerJob: Math.round((workerMs / n) * 1000) / 1000,
    backendCpuMsPerJob: Math.round((backendMs / n) * 1000) / 1000, backends: backends.length
  }))
})
if (queue.kind === "redis") await deleteRedisKeys(queue.url, `${queue.prefix}*`)
