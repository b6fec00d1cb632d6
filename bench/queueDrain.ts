/**
 * queue_drain: N tiny jobs drained by P worker processes of C workers each, jobs/s, the engine on
 * each of its queues beside a reference in its perfTest shape, side by side in one run:
 *
 * - `queue_drain`: the store's own queue (PostgreSQL: claims in the jobs table, `NOTIFY`) against
 *   graphile-worker (graphile.ts);
 * - `queue_drain_nats`: the engine on NATS JetStream (`genjobs/nats`) against the same
 *   graphile-worker run;
 * - `queue_drain_redis`: the engine on Redis Streams (`genjobs/redis`) against BullMQ on the same
 *   Redis (bullmq.ts), the same P processes of one Worker with `concurrency` C.
 *
 * Each queue is filled before the clock starts: the engine's through its own submit path
 * (Jobs.submit; with a broker configured, each submit publishes its job's id after the commit, and
 * the broker is checked to hold all N), graphile-worker's with batched add_jobs, BullMQ's with
 * batched addBulk. The worker processes load their modules, then all get `go` at once; the clock
 * stops when the database shows every job done (for BullMQ: when its queue counts no job left),
 * polled every 20 ms on every side, the databases by an existence check that costs the same at
 * any queue size (engineDrained, graphileDrained). With a broker, the workers take deliveries from
 * it and claim the stored jobs by id (src/services/brokerClaims.ts): the clock stops on the
 * database, as for the store's own queue.
 *
 * graphile-worker runs three times, each on a fresh database with the same P x C: `batched`, its best
 * published configuration (a local queue of 500, batched completions and failures), the reference
 * of the ratios, since the project's target (>= 0.5) is against graphile-worker at its best; and
 * `unbatched`, its defaults (each worker fetches its own job, one statement per completion), the
 * reference of the earlier results, printed in params (`unbatched*`). Batched, the default 15,500
 * jobs drain in about half a second on 2 cores, so the 20 ms poll and the runners' start-up weigh
 * a few per cent there; a larger BENCH_DRAIN_JOBS gives a steadier reference. The third run, for
 * `queue_drain` only, is batched again on an engine-migrated database holding N submitted engine
 * jobs, its task making each engine job's store writes (the engine's claim by id and its ending,
 * graphileSameWrites.ts), printed in params (`graphileSameWrites*`): graphile-worker doing the
 * work an engine job costs the store. A fourth drain, also for `queue_drain` only, sends the
 * engine's own drain statements bare at the engine's shape (drainStatementsWorker.ts), in params
 * as `statementsFloor*`: the most any worker sending those statements reaches.
 *
 * Every drain also reads the CPU its worker processes spent, and on PostgreSQL its database's
 * backends (from /proc, so the server must run on this machine), per job in params
 * (`engineCpuUsPerJob`, `referenceCpuUsPerJob`), beside `cpuBudgetUsPerJobAtTarget`: the CPU a job
 * may cost in all for the target's rate on this machine's cores. A ratio says how far apart two
 * drains are; the CPU per job says what rate the work allows at all.
 *
 * The brokers are shared (BENCH_REDIS_URL, BENCH_NATS_URL): each run names its stream (and
 * BullMQ's keys) under a random prefix of its own and deletes them afterwards. BENCH_DRAIN_QUEUES
 * picks the queues (default `store,redis,nats`).
 */
import { jetstreamManager } from "@nats-io/jetstream"
import { connect as natsConnect } from "@nats-io/transport-node"
import { createClient } from "@redis/client"
import type { Engine } from "genjobs"
import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { availableParallelism } from "node:os"
import type pg from "pg"
import {
  addNoopBullmqJobs,
  BULLMQ_JOB_OPTIONS,
  bullmqJobsFailed,
  bullmqJobsLeft,
  bullmqPrefix,
  bullmqVersion,
  deleteRedisKeys,
  openBullmqQueue,
  removeBullmqQueue
} from "./bullmq.js"
import { forkTs, goAll, readyAll, stopAll } from "./lib/child.js"
import { seed, startPgEngine, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { engineFrom, settings } from "./lib/env.js"
import { processCpuMs } from "./lib/cpu.js"
import { connect, ownDatabaseCpu, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import {
  addJobsForIds,
  addNoopJobs,
  type GraphileConfigName,
  graphileConfigLabel,
  graphileJobsFailed,
  graphileDrained,
  installGraphile
} from "./graphile.js"
import { SAME_WRITES_POOL, SAME_WRITES_TASK } from "./graphileSameWrites.js"

const POLL_MS = 20

/** The queue the engine runs on: the store's own, or a broker under a prefix of this run's own. */
export type DrainQueue =
  | { readonly kind: "store" }
  | { readonly kind: "redis" | "nats"; readonly url: string; readonly prefix: string }

type BrokerQueue = Extract<DrainQueue, { readonly prefix: string }>

const brokerQueue = (kind: BrokerQueue["kind"]): BrokerQueue => ({
  kind,
  url: kind === "redis" ? settings.redisUrl : settings.natsUrl,
  // A table prefix (lower case, digits, _): the adapters name their stream `<prefix>jobs`.
  prefix: `bench_${kind}_${randomBytes(4).toString("hex")}_`
})

/** How a worker process learns its queue. */
export const queueFromEnv = (): DrainQueue => JSON.parse(process.env.BENCH_DRAIN_QUEUE ?? `{"kind":"store"}`) as DrainQueue

/**
 * The bench engine (lib/engine.ts's startPgEngine: PostgreSQL, the no-op provider, warnings only)
 * on `queue`. startPgEngine names a broker's stream after the table prefix (`genjobs_jobs`), which
 * other runs on the shared brokers would share: a broker queue is made here with this run's prefix,
 * the rest of the engine as startPgEngine makes it.
 */
export const startDrainEngine = (url: string, workers: number, queue: DrainQueue): Promise<Engine> =>
  startPgEngine(url, { workers, ...(queue.kind === "store" ? {} : { queue, queuePrefix: queue.prefix }) })

const withNats = async <A>(url: string, body: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<A>): Promise<A> => {
  const nc = await natsConnect({ servers: url, name: "genjobs bench" })
  try {
    return await body(await jetstreamManager(nc))
  } finally {
    await nc.close()
  }
}

/** The entries of the stream `prefix` + "jobs" and of its per-account lanes (`prefix` + "jobs:<account>"). */
const redisStreamLength = async (url: string, prefix: string): Promise<number> => {
  const client = createClient({ url })
  await client.connect()
  try {
    let total = await client.xLen(`${prefix}jobs`)
    for await (const keys of client.scanIterator({ MATCH: `${prefix}jobs:*`, TYPE: "stream", COUNT: 1_000 })) {
      for (const key of keys) total += await client.xLen(key)
    }
    return total
  } finally {
    client.destroy()
  }
}

/** Messages the broker holds for the engine (published and not yet acked). */
const brokerBacklog = (queue: BrokerQueue): Promise<number> =>
  queue.kind === "redis"
    ? redisStreamLength(queue.url, queue.prefix)
    : withNats(queue.url, async (jsm) => (await jsm.streams.info(`${queue.prefix}jobs`)).state.messages)

/** Deletes what the engine made in the broker: the stream (with its group, or its consumer). */
const deleteBrokerQueue = async (queue: BrokerQueue) => {
  if (queue.kind === "redis") {
    await deleteRedisKeys(queue.url, `${queue.prefix}*`)
    return
  }
  await withNats(queue.url, async (jsm) => {
    await jsm.streams.delete(`${queue.prefix}jobs`).catch((error: unknown) => {
      if (!String(error).includes("not found")) throw error
    })
  })
}

/** A drain's time, and the CPU (ms, from /proc) of its worker processes and of its database's backends. */
interface Drained {
  readonly seconds: number
  readonly workersCpuMs: number
  readonly databaseCpuMs?: number | undefined
}

/**
 * `drainedWait`, or a failure as soon as a worker exits before it: a worker that dies mid-drain
 * (its stderr says why) leaves jobs behind, and the wait would otherwise run to its timeout.
 */
const untilDrainedOrExited = async (children: ReadonlyArray<ChildProcess>, file: string, drainedWait: Promise<void>) => {
  let settled = false
  const exited = new Promise<never>((_, reject) => {
    for (const child of children) {
      child.once("exit", (code, signal) => {
        if (!settled) reject(new Error(`a drain worker (${file}) exited (${code ?? signal}) before the queue drained`))
      })
    }
  })
  // Whichever loses the race is dropped: the drained poll fails once its client is closed.
  drainedWait.catch(() => {})
  exited.catch(() => {})
  try {
    await Promise.race([drainedWait, exited])
  } finally {
    settled = true
  }
}

/**
 * Forks the workers (`file`, with `env`), waits for them to load, starts them together and times
 * until `drained`; with `database`, the CPU its backends spent meanwhile (the drained check's 20 ms
 * probes included, an existence check on either side).
 */
export const drain = async (
  file: string,
  env: Record<string, string>,
  drained: () => Promise<boolean>,
  timeoutMs: number,
  database?: string
): Promise<Drained> => {
  const children = Array.from(
    { length: settings.drainProcesses },
    () => forkTs(file, { ...env, BENCH_CONCURRENCY: String(settings.drainConcurrency) })
  )
  try {
    await readyAll(children)
    const backends = database === undefined ? undefined : await ownDatabaseCpu(database)
    const workersBefore = children.map((child) => processCpuMs(child.pid!))
    const start = performance.now()
    await goAll(children)
    await untilDrainedOrExited(children, file, waitFor("the queue to drain", drained, POLL_MS, timeoutMs))
    const seconds = (performance.now() - start) / 1000
    const workersCpuMs = children.reduce((ms, child, i) => ms + processCpuMs(child.pid!) - workersBefore[i]!, 0)
    // As one "request": ownDatabaseCpu answers µs per request, here the drain's µs in all.
    const databaseCpuMs = backends === undefined ? undefined : (await backends(1)) / 1_000
    return { seconds, workersCpuMs, databaseCpuMs }
  } finally {
    await stopAll(children)
  }
}

/**
 * Whether no engine job is left to run: the drain's clock polls it every POLL_MS. Two existence
 * checks, each served by a partial index (pending jobs, and processing jobs' leases), so a poll
 * costs the same at any queue size. A count by status read every row of the table each time
 * (8 ms a poll at 15,500 jobs, 50 polls a second), which the engine's drain, bound by
 * the 2 cores' CPU, paid beside its own work while graphile-worker's count shrank as it deleted
 * its jobs.
 */
export const engineDrained = async (client: pg.Client): Promise<boolean> =>
  (await client.query(`SELECT NOT EXISTS (SELECT 1 FROM ${TABLE_PREFIX}jobs WHERE status = 'pending')
    AND NOT EXISTS (SELECT 1 FROM ${TABLE_PREFIX}jobs WHERE status = 'processing') AS done`)).rows[0].done === true

const countByStatus = async (client: pg.Client) => {
  const rows = (await client.query(`SELECT status, count(*) AS n FROM ${TABLE_PREFIX}jobs GROUP BY status`)).rows
  return Object.fromEntries(rows.map((r: { status: string; n: string }) => [r.status, Number(r.n)])) as Record<string, number>
}

interface EngineDrain extends Drained {
  readonly insertSeconds: number
  /** Jobs claimed more than once (a lease lost, a delivery taken over): 0 in a clean drain. */
  readonly retried: number
  /** With a broker: messages it held when the clock started (all N), and after the workers stopped. */
  readonly brokerBefore?: number | undefined
  readonly brokerAfter?: number | undefined
}

const engineSide = (n: number, queue: DrainQueue) =>
  withDatabase(queue.kind === "store" ? "drain" : `drain_${queue.kind}`, async (url, name): Promise<EngineDrain> => {
    try {
      const engine = await startDrainEngine(url, 0, queue)
      const insertStart = performance.now()
      try {
        // Submits over BENCH_DRAIN_ACCOUNTS (8), 16 at a time: one account's submits serialise on its row.
        await submitMany(engine, await seed(engine, settings.drainAccounts), n, 16)
      } finally {
        await engine.dispose()
      }
      const insertSeconds = (performance.now() - insertStart) / 1000
      const brokerBefore = queue.kind === "store" ? undefined : await brokerBacklog(queue)
      if (brokerBefore !== undefined && brokerBefore !== n) {
        throw new Error(`engine drain on ${queue.kind}: ${brokerBefore} messages in the broker after ${n} submits`)
      }
      const client = await connect(name)
      try {
        const drained = await drain(
          "queueDrainWorker.ts",
          { BENCH_DATABASE_URL: url, BENCH_DRAIN_QUEUE: JSON.stringify(queue) },
          () => engineDrained(client),
          600_000,
          name
        )
        const by = await countByStatus(client)
        if (by["completed"] !== n) throw new Error(`engine drain on ${queue.kind}: expected ${n} completed jobs, found ${JSON.stringify(by)}`)
        const retried = Number((await client.query(`SELECT count(*) AS n FROM ${TABLE_PREFIX}jobs WHERE attempts > 1`)).rows[0].n)
        const brokerAfter = queue.kind === "store" ? undefined : await brokerBacklog(queue)
        return { ...drained, insertSeconds, retried, brokerBefore, brokerAfter }
      } finally {
        await client.end()
      }
    } finally {
      if (queue.kind !== "store") await deleteBrokerQueue(queue)
    }
  })

export const graphileSide = (n: number, config: GraphileConfigName) =>
  withDatabase(config === "batched" ? "graphileb" : "graphile", async (url, name) => {
    await installGraphile(url)
    const client = await connect(name)
    try {
      const insertStart = performance.now()
      await addNoopJobs(client, n)
      const insertSeconds = (performance.now() - insertStart) / 1000
      const drained = await drain("graphileWorker.ts", { BENCH_DATABASE_URL: url, BENCH_GRAPHILE_CONFIG: config }, () =>
        graphileDrained(client), 600_000, name)
      const failed = await graphileJobsFailed(client)
      if (failed !== 0) throw new Error(`graphile-worker ${config} drain: ${failed} jobs failed`)
      return { ...drained, insertSeconds }
    } finally {
      await client.end()
    }
  })

/** Fails the drain named `who` unless all `n` engine jobs ended completed, each claimed exactly once. */
const expectEachCompletedOnce = async (client: pg.Client, who: string, n: number) => {
  const by = await countByStatus(client)
  if (by["completed"] !== n) throw new Error(`${who}: expected ${n} completed engine jobs, found ${JSON.stringify(by)}`)
  const retried = Number((await client.query(`SELECT count(*) AS n FROM ${TABLE_PREFIX}jobs WHERE attempts <> 1`)).rows[0].n)
  if (retried !== 0) throw new Error(`${who}: ${retried} engine jobs claimed other than once`)
}

/** A fresh database (`label`) holding N engine jobs submitted as the engine side submits them, for `body`. */
const withSubmittedJobs = <A>(label: string, n: number, body: (url: string, name: string) => Promise<A>): Promise<A> =>
  withDatabase(label, async (url, name) => {
    const engine = await startDrainEngine(url, 0, { kind: "store" })
    try {
      await submitMany(engine, await seed(engine, settings.drainAccounts), n, 16)
    } finally {
      await engine.dispose()
    }
    return body(url, name)
  })

/**
 * graphile-worker batched making the engine's writes (graphileSameWrites.ts): on one fresh
 * database, N engine jobs submitted as the engine side submits them, graphile-worker's schema, and
 * N graphile-worker jobs, one per engine job in the engine's claim order (fair_key, id), its
 * payload the engine job's id; the clock covers the drain only, as for the no-op reference. After
 * it, every engine job must be completed, claimed once.
 */
export const graphileSameWritesSide = (n: number) =>
  withSubmittedJobs("graphilesw", n, async (url, name) => {
    await installGraphile(url)
    const client = await connect(name)
    try {
      const ids = (await client.query<{ id: string }>(`SELECT id FROM ${TABLE_PREFIX}jobs WHERE status = 'pending' ORDER BY fair_key, id`))
        .rows.map((row) => row.id)
      if (ids.length !== n) throw new Error(`graphile-worker same writes: ${ids.length} pending engine jobs after ${n} submits`)
      const insertStart = performance.now()
      await addJobsForIds(client, SAME_WRITES_TASK, ids)
      const insertSeconds = (performance.now() - insertStart) / 1000
      const drained = await drain(
        "graphileWorker.ts",
        { BENCH_DATABASE_URL: url, BENCH_GRAPHILE_CONFIG: "batched", BENCH_GRAPHILE_TASK: "sameWrites" },
        () => graphileDrained(client),
        600_000,
        name
      )
      const failed = await graphileJobsFailed(client)
      if (failed !== 0) throw new Error(`graphile-worker same writes: ${failed} jobs failed`)
      await expectEachCompletedOnce(client, "graphile-worker same writes", n)
      return { ...drained, insertSeconds }
    } finally {
      await client.end()
    }
  })

/**
 * The engine's drain statements alone (drainStatementsWorker.ts): on a fresh database, N engine
 * jobs submitted as the engine side submits them, then P processes each sending the engine's
 * claim and its combined ending and claim, written bare with node-postgres, BENCH_DRAIN_FLOOR_BATCH
 * jobs a statement; the clock covers the drain only and stops on the database, as the engine
 * side's does. Every job must end completed, claimed once. The ceiling of any worker sending
 * these statements: what the store's writes allow, beside the reference's rate and the target's.
 */
export const statementsFloorSide = (n: number) =>
  withSubmittedJobs("drainfloor", n, async (url, name) => {
    const client = await connect(name)
    try {
      const drained = await drain(
        "drainStatementsWorker.ts",
        { BENCH_DATABASE_URL: url, BENCH_DRAIN_FLOOR_LANES: String(settings.drainFloorLanes), BENCH_DRAIN_FLOOR_BATCH: String(settings.drainFloorBatch) },
        () => engineDrained(client),
        600_000,
        name
      )
      await expectEachCompletedOnce(client, "statements floor", n)
      return drained
    } finally {
      await client.end()
    }
  })

const bullmqSide = async (n: number) => {
  const url = settings.redisUrl
  const prefix = bullmqPrefix()
  const queue = await openBullmqQueue(url, prefix)
  try {
    const insertStart = performance.now()
    await addNoopBullmqJobs(queue, n)
    const insertSeconds = (performance.now() - insertStart) / 1000
    const waiting = await bullmqJobsLeft(queue)
    if (waiting !== n) throw new Error(`BullMQ drain: ${waiting} jobs waiting after adding ${n}`)
    const drained = await drain("bullmqWorker.ts", { BENCH_REDIS_URL: url, BENCH_BULLMQ_PREFIX: prefix }, async () =>
      (await bullmqJobsLeft(queue)) === 0, 600_000)
    // Jobs leave the queue only by completing (removed on completion) or failing (kept): none failed, all completed.
    const failed = await bullmqJobsFailed(queue)
    if (failed !== 0) throw new Error(`BullMQ drain: ${failed} jobs failed`)
    return { ...drained, insertSeconds }
  } finally {
    await removeBullmqQueue(queue, url, prefix)
  }
}

const seconds = (s: number) => Math.round(s * 1000) / 1000

/** µs of CPU per job of a drain: its worker processes, and its database's backends when measured. */
const cpuPerJob = (side: Drained, n: number) => ({
  workers: Math.round((side.workersCpuMs * 1000) / n),
  ...(side.databaseCpuMs === undefined ? {} : { database: Math.round((side.databaseCpuMs * 1000) / n) })
})

/**
 * The CPU a job may cost, workers and database together, for a drain at `ratio` x `referenceRate`
 * on this machine's cores: what a target asks of the engine's whole work, beside what it spends.
 */
const budgetAt = (ratio: number, referenceRate: number) => Math.round((availableParallelism() * 1e6) / (ratio * referenceRate))

const ENGINE_INSERT = `Jobs.submit over ${settings.drainAccounts} accounts, 16 in flight, before the clock`

const brokerParams = (side: EngineDrain, n: number) => ({
  // The broker server's own CPU is not counted, on either side.
  engineCpuUsPerJob: cpuPerJob(side, n),
  engineBrokerBacklogAtStart: side.brokerBefore,
  engineBrokerLeftAfterStop: side.brokerAfter,
  engineJobsClaimedMoreThanOnce: side.retried
})

const QUEUES = ["store", "redis", "nats"] as const

export const queueDrain = async () => {
  const n = settings.drainJobs
  const unknown = settings.drainQueues.filter((q) => !(QUEUES as ReadonlyArray<string>).includes(q))
  if (unknown.length > 0) throw new Error(`BENCH_DRAIN_QUEUES: unknown queue(s) ${unknown.join(", ")}; known: ${QUEUES.join(", ")}`)
  const runs = (queue: (typeof QUEUES)[number]) => settings.drainQueues.includes(queue)
  const common = { jobs: n, processes: settings.drainProcesses, concurrency: settings.drainConcurrency, engineFrom, ...(settings.limitedModel ? { limitedModelInCatalog: true } : {}) }

  let batched: Drained & { readonly insertSeconds: number } | undefined
  const graphileBatched = async () => {
    if (batched === undefined) {
      log(`queue_drain: graphile-worker batched (${graphileConfigLabel.batched}), ${n} jobs`)
      batched = await graphileSide(n, "batched")
    }
    return batched
  }
  const graphileReference = {
    referenceIs: `graphile-worker 0.18 batched (${graphileConfigLabel.batched}), perfTest shape (batched add_jobs, no-op task)`,
    referenceInsert: "add_jobs, 1000 per call, before the clock"
  }

  if (runs("store")) {
    log(`queue_drain: engine on the store's own queue (PostgreSQL), ${n} jobs`)
    const engine = await engineSide(n, { kind: "store" })
    log(`queue_drain: graphile-worker unbatched (${graphileConfigLabel.unbatched}), ${n} jobs`)
    const unbatched = await graphileSide(n, "unbatched")
    const reference = await graphileBatched()
    log(`queue_drain: graphile-worker batched making the engine's writes per job, ${n} jobs`)
    const sameWrites = await graphileSameWritesSide(n)
    log(`queue_drain: the engine's drain statements alone, bare, ${n} jobs`)
    const floor = await statementsFloorSide(n)
    const floorRate = n / floor.seconds
    const engineRate = n / engine.seconds
    const unbatchedRate = n / unbatched.seconds
    const sameWritesRate = n / sameWrites.seconds
    emit({
      figure: "queue_drain",
      engine: engineRate,
      reference: n / reference.seconds,
      unit: "jobs/s",
      better: "higher",
      referenceIs: graphileReference.referenceIs,
      target: ">= 0.5",
      params: {
        ...common,
        queue: "the store's own (PostgreSQL)",
        engineInsert: ENGINE_INSERT,
        engineInsertJobsPerSecond: Math.round(n / engine.insertSeconds),
        referenceInsert: graphileReference.referenceInsert,
        referenceInsertJobsPerSecond: Math.round(n / reference.insertSeconds),
        engineSeconds: seconds(engine.seconds),
        referenceSeconds: seconds(reference.seconds),
        referenceConfig: "batched",
        engineJobsClaimedMoreThanOnce: engine.retried,
        engineCpuUsPerJob: cpuPerJob(engine, n),
        referenceCpuUsPerJob: cpuPerJob(reference, n),
        cpuBudgetUsPerJobAtTarget: budgetAt(0.5, n / reference.seconds),
        unbatchedReferenceIs: `graphile-worker 0.18 unbatched (${graphileConfigLabel.unbatched}), the same shape`,
        unbatchedReference: Math.round(unbatchedRate),
        unbatchedRatio: Math.round((engineRate / unbatchedRate) * 1000) / 1000,
        unbatchedReferenceSeconds: seconds(unbatched.seconds),
        unbatchedReferenceInsertJobsPerSecond: Math.round(n / unbatched.insertSeconds),
        graphileSameWritesIs: `graphile-worker 0.18 batched (${graphileConfigLabel.batched}, a pool of ${SAME_WRITES_POOL}) on the ` +
          `engine's database, each job's task sending the engine's claim of its engine job by id and the engine's ending ` +
          `(two statements a job, not batched; bench/graphileSameWrites.ts)`,
        graphileSameWritesJobsPerSecond: Math.round(sameWritesRate),
        engineToGraphileSameWrites: Math.round((engineRate / sameWritesRate) * 1000) / 1000,
        graphileSameWritesToNoOp: Math.round((sameWritesRate / (n / reference.seconds)) * 1000) / 1000,
        graphileSameWritesSeconds: seconds(sameWrites.seconds),
        graphileSameWritesCpuUsPerJob: cpuPerJob(sameWrites, n),
        graphileSameWritesInsertJobsPerSecond: Math.round(n / sameWrites.insertSeconds),
        statementsFloorIs: `the engine's drain statements alone (lib/drainTexts.ts: its claim, then its ending with the next claim ` +
          `in one statement), bare node-postgres, P processes x ${settings.drainFloorLanes} connections, ${settings.drainFloorBatch} ` +
          `jobs a statement, on the engine's database (bench/drainStatementsWorker.ts)`,
        statementsFloorJobsPerSecond: Math.round(floorRate),
        statementsFloorToReference: Math.round((floorRate / (n / reference.seconds)) * 1000) / 1000,
        engineToStatementsFloor: Math.round((engineRate / floorRate) * 1000) / 1000,
        statementsFloorSeconds: seconds(floor.seconds),
        statementsFloorCpuUsPerJob: cpuPerJob(floor, n)
      }
    })
  }

  if (runs("nats")) {
    const queue = brokerQueue("nats")
    log(`queue_drain: engine on NATS JetStream (${queue.url}, stream ${queue.prefix}jobs), ${n} jobs`)
    const engine = await engineSide(n, queue)
    const reference = await graphileBatched()
    emit({
      figure: "queue_drain_nats",
      engine: n / engine.seconds,
      reference: n / reference.seconds,
      unit: "jobs/s",
      better: "higher",
      referenceIs: graphileReference.referenceIs,
      params: {
        ...common,
        queue: "NATS JetStream (genjobs/nats: a work-queue stream, a subject and durable pull consumer per account)",
        engineInsert: `${ENGINE_INSERT}, each publishing its id`,
        engineInsertJobsPerSecond: Math.round(n / engine.insertSeconds),
        referenceInsert: graphileReference.referenceInsert,
        referenceInsertJobsPerSecond: Math.round(n / reference.insertSeconds),
        engineSeconds: seconds(engine.seconds),
        referenceSeconds: seconds(reference.seconds),
        referenceConfig: "batched",
        ...brokerParams(engine, n)
      }
    })
  }

  if (runs("redis")) {
    const queue = brokerQueue("redis")
    log(`queue_drain: engine on Redis Streams (${queue.url}, stream ${queue.prefix}jobs), ${n} jobs`)
    const engine = await engineSide(n, queue)
    log(`queue_drain: BullMQ ${bullmqVersion} on the same Redis, ${n} jobs`)
    const reference = await bullmqSide(n)
    emit({
      figure: "queue_drain_redis",
      engine: n / engine.seconds,
      reference: n / reference.seconds,
      unit: "jobs/s",
      better: "higher",
      referenceIs: `BullMQ ${bullmqVersion} on the same Redis: P processes of one Worker with concurrency C, a no-op processor, ` +
        `jobs with ${JSON.stringify(BULLMQ_JOB_OPTIONS)}, node-redis client`,
      target: ">= 0.5",
      params: {
        ...common,
        queue: "Redis Streams (genjobs/redis: one stream and consumer group per account, fair shares)",
        engineInsert: `${ENGINE_INSERT}, each publishing its id`,
        engineInsertJobsPerSecond: Math.round(n / engine.insertSeconds),
        referenceInsert: "addBulk, 1000 per call, before the clock",
        referenceInsertJobsPerSecond: Math.round(n / reference.insertSeconds),
        engineSeconds: seconds(engine.seconds),
        referenceSeconds: seconds(reference.seconds),
        ...brokerParams(engine, n),
        referenceCpuUsPerJob: cpuPerJob(reference, n),
        cpuBudgetUsPerJobAtTarget: budgetAt(0.5, n / reference.seconds)
      }
    })
  }
}
