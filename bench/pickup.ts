/**
 * pickup: how long a job waits for an idle worker, p50/p99 over sequential jobs, the engine beside
 * graphile-worker in the shape of its latencyTest: one worker (concurrency 1), each job added
 * after the previous one started, time from before the submit (engine: Jobs.submit;
 * graphile-worker: addJob) to the provider / task being called. A 10 ms pause between jobs lets
 * the previous job finish, so this is wake-up plus claim, not queueing behind a running job.
 *
 * The engine is timed on each of its queues, every case on a database (and a table prefix, which
 * on a broker names its stream) of its own:
 * - `pickup_p50`: the store's queue, one engine submitting to its own idle worker, which the
 *   submit hands the job to in its statement (docs/decisions.md, "Local hand-off").
 * - `pickup_no_handoff_p50`: the store's queue in one process without the hand-off: submits
 *   through an engine without workers, run by a second engine's worker in the same process (the
 *   hand-off only reaches workers of the submitting engine), woken by NOTIFY, then a claim. The
 *   path a submit takes when the hand-off is not there, so pickup_p50's params say what the
 *   hand-off gains.
 * - `pickup_remote_p50`: the same with the worker's engine in another process (pickupWorker.ts).
 *   Beside it, three floors of that pickup (pickupPgFloor.ts; `pgFloor*`, `engineStatements*` and
 *   `frameworkFloor*` in its params): the design alone written bare (a row committed, NOTIFY after
 *   it, a claim in queue order committed), the engine's own submit, claim and ending statements
 *   written bare, and those statements through Effect and the engine's PostgreSQL client.
 *   `BENCH_PICKUP_CASES=remote` times only this case beside graphile-worker (`store`: the three
 *   store cases).
 * - `pickup_redis_p50`, `pickup_nats_p50`: the queue on a broker, submits through an engine
 *   without workers (commit, then publish), the worker's engine in another process blocking on
 *   the broker's receive, then claiming the job by id; in params the same with one engine
 *   submitting to its own worker (`sameProcess*`: with a broker there is no hand-off).
 * - `pickup_nats_p50` is also timed against a bare JetStream consumer in the same run (its
 *   `bareJetStream*` params and the figure `pickup_nats_vs_jetstream_p50`): publish (awaiting the PubAck)
 *   to a work-queue stream read by nats.js's `consume()` in another process, to the handler
 *   (pickupLib.ts's startBareJetStream). The issue's reference for the NATS queue.
 * - `pickup_redis_p50`'s reference is BullMQ on the same Redis (issue 34): a Worker of
 *   concurrency 1 in another process (pickupBullmqWorker.ts), `Queue.add` to its processor's
 *   call; graphile-worker's p50 is beside it in params.
 * - Beside each broker's reference, the floor of a broker pickup for a job kept in PostgreSQL
 *   (pickupFloor.ts, `storeFloor*` in pickup_redis_p50's and pickup_nats_vs_jetstream_p50's
 *   params): a row committed, its id published, received in another process, the row claimed by id
 *   and committed, then the start, written bare. The references make neither commit: this says how
 *   close to them a store-kept job can come, and how far the engine is from that.
 * Across processes the provider's time is read on the clock the processes share
 * (performance.timeOrigin + now, checked against ping-pongs: `clockOffsetMs` in params).
 *
 * graphile-worker is measured in both configurations of graphile.ts, each on a fresh database:
 * `unbatched` (its defaults) and `batched` (its best published throughput configuration: a local
 * queue of 500, batched completions). Batching is for throughput and may cost latency (the local
 * queue's fetch sits between the NOTIFY and the task), so the reference of every figure is the
 * configuration with the lower p50 in this run, `referenceConfig` in params, the other beside it.
 * Both run in this process, so the process that added a job is the one its NOTIFY wakes; beside
 * pickup_remote_p50 (`graphileRemote*` in its params) graphile-worker batched runs in another
 * process too (pickupGraphileWorker.ts), for what the other process costs the reference.
 *
 * Every case is set up first, then timed one job of each case after the other (the order
 * rotated each time), so a machine getting busier or quieter during the run weighs on every case
 * alike; `p50ByFifth` in params is the p50 of each fifth of a case's jobs, in the order taken.
 * Whether the submits of pickup_p50 were handed off is counted from outside: a queued submit
 * sends NOTIFY on the engine's jobs channel, a handed-off one does not (`handOff.handedOff`).
 * The statements a pickup costs are counted from outside too: pickup_remote_p50's
 * `transactionsPerJob` and `graphileRemoteTransactionsPerJob` are the transactions each case's
 * database ended while timed (pg_stat_database), per job, read once PostgreSQL published them.
 */
import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import { makeWorkerUtils } from "graphile-worker"
import pg from "pg"
import { bullmqPrefix, bullmqVersion, openBullmqQueue, removeBullmqQueue } from "./bullmq.js"
import { exited, forkTs, nextMessage } from "./lib/child.js"
import { type BenchQueue, seed, submit } from "./lib/engine.js"
import { engineFrom, settings } from "./lib/env.js"
import { connect } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"
import { type FloorBroker, floorSubmitter } from "./pickupFloor.js"
import { type PgFloorShape, pgFloorSubmitter } from "./pickupPgFloor.js"
import { type GraphileConfigName, graphileConfigLabel, graphilePool, installGraphile, quietLogger, runGraphile } from "./graphile.js"
import {
  bareJetStreamPublisher,
  brokerUrls,
  deleteBrokerNames,
  type FromPickupWorker,
  newPrefix,
  sharedNow,
  startPickupEngine,
  timedProvider,
  type ToPickupWorker
} from "./pickupLib.js"

const WARMUP = 20
const PAUSE_MS = 10
/** p50s by part of the run: this many parts. */
const PARTS = 5
/** A job not started within this long fails the figure (a lost job, not a slow pickup). */
const SEEN_TIMEOUT_MS = 30_000
/** Ping-pongs with a worker process to check the shared clock. */
const CLOCK_PINGS = 50
/** A worker process whose clock is further off than this fails the figure: its times would be wrong. */
const MAX_CLOCK_OFFSET_MS = 0.5
/** The issue's goal for every pickup figure. */
const TARGET = "<= 1.0 (the issue's target: pickup p50 <= 1.0x graphile-worker on every queue, cross-process included)"
/** The issue: the local hand-off stays only if it improves pickup p50 by this much or more. */
const HAND_OFF_THRESHOLD = 0.2
/**
 * An idle PostgreSQL 15 session publishes its statistics (pg_stat_database's transaction counts)
 * up to 10 s after its last transaction (PGSTAT_IDLE_INTERVAL): the counts are read this long
 * after the jobs they count.
 */
const STATS_FLUSH_MS = 10_500

/** Resolvers of the jobs in flight by id, called with the time (this process's performance.now) the worker saw them. */
const starts = new Map<string, (at: number) => void>()
const started = (id: string, at: number) => starts.get(id)?.(at)
/** A job seen by a process of this machine at `at` on the shared clock. */
const startedAt = (id: string, at: number) => started(id, at - performance.timeOrigin)

/** What a run acquired, released last first (also when setting up or timing failed). */
class Resources {
  private readonly releases: Array<() => Promise<unknown>> = []
  defer(release: () => Promise<unknown>) {
    this.releases.push(release)
  }
  async releaseAll() {
    const errors: Array<unknown> = []
    for (const release of this.releases.reverse()) {
      try {
        await release()
      } catch (error) {
        errors.push(error)
      }
    }
    if (errors.length > 0) throw errors[0]
  }
}

/** A fresh database `genjobs_bench_<label>_<random>`, dropped when the run's resources are released. */
const openDatabase = async (resources: Resources, label: string): Promise<string> => {
  const name = `genjobs_bench_${label}_${randomBytes(4).toString("hex")}`
  const admin = await connect("postgres")
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  resources.defer(async () => {
    const admin = await connect("postgres")
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await admin.end()
    }
  })
  return `${settings.pgUrl}/${name}`
}

/** One case: how to queue job `id` (whose start calls `started`), and its times. */
interface Case {
  readonly key: string
  readonly label: string
  readonly add: (id: string) => Promise<unknown>
  readonly latencies: Array<number>
  /** Of each latency, the part until the submit (add) returned: the rest is the wake-up, the claim and the start. */
  readonly submits: Array<number>
  /** The shared clock checked against the worker process's, for the cases that have one. */
  readonly clock?: ClockCheck
  /** NOTIFYs heard on the case's jobs channel so far: one per queued submit (store queue). */
  readonly queued?: () => number
  /** Transactions its database committed or rolled back so far, as pg_stat_database has them published. */
  readonly transactions?: () => Promise<number>
  next: number
}

const newCase = (
  key: string,
  label: string,
  add: (id: string) => Promise<unknown>,
  extra: Pick<Case, "clock" | "queued" | "transactions"> = {}
): Case => ({
  key,
  label,
  add,
  latencies: [],
  submits: [],
  ...extra,
  next: 0
})

interface ClockCheck {
  /** The worker process's clock minus this one's, estimated from the ping-pong of least round trip. */
  readonly clockOffsetMs: number
  readonly pingRoundTripMs: number
}

/** Reads the worker's clock `CLOCK_PINGS` times; the reading of least round trip bounds the offset within half of it. */
const checkClock = async (child: ChildProcess, pong: { next?: (at: number) => void }): Promise<ClockCheck> => {
  let best: ClockCheck | undefined
  for (let i = 0; i < CLOCK_PINGS; i++) {
    const sent = sharedNow()
    const at = await new Promise<number>((resolve) => {
      pong.next = resolve
      child.send({ type: "ping" } satisfies ToPickupWorker)
    })
    const received = sharedNow()
    const check = { clockOffsetMs: at - (sent + received) / 2, pingRoundTripMs: received - sent }
    if (best === undefined || check.pingRoundTripMs < best.pingRoundTripMs) best = check
  }
  if (Math.abs(best!.clockOffsetMs) > MAX_CLOCK_OFFSET_MS) {
    throw new Error(`the worker process's clock is ${best!.clockOffsetMs} ms off this one's: its pickup times would be wrong`)
  }
  return { clockOffsetMs: ms(best!.clockOffsetMs), pingRoundTripMs: ms(best!.pingRoundTripMs) }
}

/**
 * The transactions `url`'s database ended so far (committed or rolled back), every process's. The
 * database is the case's alone and the pickup's statements are each a transaction of their own, so
 * per job this is the statements a pickup costs, from its submit to its run's ending, the
 * engines' periodic statements (reaper, lease renewals) spread over the jobs.
 */
const transactionsOf = (url: string) => async (): Promise<number> => {
  const admin = await connect("postgres")
  try {
    const { rows } = await admin.query("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1", [new URL(url).pathname.slice(1)])
    return Number(rows[0].n)
  } finally {
    await admin.end()
  }
}

/** Starts pickupWorker.ts on the case's database, prefix and queue; stopped when the resources are released. */
const startWorkerProcess = (resources: Resources, url: string, queue: BenchQueue, prefix: string, bare = false): Promise<ClockCheck> =>
  startPickupProcess(resources, "pickupWorker.ts", {
    BENCH_DATABASE_URL: url,
    BENCH_PICKUP_PREFIX: prefix,
    BENCH_PICKUP_QUEUE: JSON.stringify(queue),
    BENCH_PICKUP_BARE: bare ? "1" : "0"
  })

/** Starts a worker process speaking pickupWorker.ts's messages (`file`, with `env`); stopped when the resources are released. */
const startPickupProcess = async (resources: Resources, file: string, env: Record<string, string>): Promise<ClockCheck> => {
  const child = forkTs(file, env)
  resources.defer(() => exited(child, () => child.send({ type: "stop" } satisfies ToPickupWorker)))
  const pong: { next?: (at: number) => void } = {}
  child.on("message", (message: FromPickupWorker) => {
    if (message.type === "seen") startedAt(message.id, message.at)
    else if (message.type === "pong") pong.next?.(message.at)
  })
  await nextMessage(child, "ready")
  return checkClock(child, pong)
}

/**
 * Where the worker runs: the submitting engine's own (`oneEngine`), a second engine in this
 * process (`twoEngines`), or an engine in another process (`twoProcesses`).
 */
type Topology = "oneEngine" | "twoEngines" | "twoProcesses"

/** Counts the NOTIFYs on `prefix`'s jobs channel (adapters/sql: one per submit that queued its job). */
const countQueued = async (resources: Resources, url: string, prefix: string): Promise<() => number> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  resources.defer(() => client.end())
  let heard = 0
  client.on("notification", () => heard++)
  await client.query(`LISTEN ${pg.escapeIdentifier(`${prefix}jobs`)}`)
  return () => heard
}

const engineCase = async (
  resources: Resources,
  key: string,
  label: string,
  queue: BenchQueue,
  topology: Topology,
  options: { readonly countQueued?: boolean } = {}
): Promise<Case> => {
  const url = await openDatabase(resources, `pickup_${key}`)
  const prefix = newPrefix()
  const queued = options.countQueued === true ? await countQueued(resources, url, prefix) : undefined
  // Deferred before the engines, so it runs after they stopped (and can no longer make them again).
  if (queue.kind !== "store") resources.defer(() => deleteBrokerNames(queue, prefix))
  const provider = timedProvider(startedAt)
  const engine = await startPickupEngine(url, { workers: topology === "oneEngine" ? 1 : 0, provider, queue, prefix })
  resources.defer(() => engine.dispose())
  const [caller] = await seed(engine, 1)
  // The worker's engine starts after the seed, so its catalog is the bench's from the start.
  let clock: ClockCheck | undefined
  if (topology === "twoEngines") {
    const worker = await startPickupEngine(url, { workers: 1, provider, queue, prefix })
    resources.defer(() => worker.dispose())
  } else if (topology === "twoProcesses") {
    clock = await startWorkerProcess(resources, url, queue, prefix)
  }
  return newCase(key, label, (id) => submit(engine, caller!, id), {
    ...(clock === undefined ? {} : { clock, transactions: transactionsOf(url) }),
    ...(queued === undefined ? {} : { queued })
  })
}

const graphileCase = async (resources: Resources, config: GraphileConfigName): Promise<Case> => {
  const url = await openDatabase(resources, config === "batched" ? "pickupgb" : "pickupg")
  await installGraphile(url)
  const pool = graphilePool(url, 4)
  resources.defer(() => pool.end())
  const runner = await runGraphile(config, {
    pgPool: pool,
    concurrency: 1,
    taskList: { latency: async (payload) => started(String((payload as { id: string }).id), performance.now()) }
  })
  resources.defer(() => runner.stop())
  const utils = await makeWorkerUtils({ pgPool: pool, logger: quietLogger })
  resources.defer(async () => utils.release())
  return newCase(`graphile_${config}`, `graphile-worker ${config} (${graphileConfigLabel[config]})`, (id) => utils.addJob("latency", { id }))
}

/**
 * graphile-worker batched in another process (pickupGraphileWorker.ts), jobs added from this one:
 * beside pickup_remote_p50 in its params, what the other process costs the reference.
 */
const graphileRemoteCase = async (resources: Resources): Promise<Case> => {
  const url = await openDatabase(resources, "pickupgr")
  await installGraphile(url)
  const pool = graphilePool(url, 2)
  resources.defer(() => pool.end())
  const clock = await startPickupProcess(resources, "pickupGraphileWorker.ts", { BENCH_DATABASE_URL: url, BENCH_GRAPHILE_CONFIG: "batched" })
  const utils = await makeWorkerUtils({ pgPool: pool, logger: quietLogger })
  resources.defer(async () => utils.release())
  return newCase("graphile_remote", `graphile-worker batched (${graphileConfigLabel.batched}), worker in another process`, (id) => utils.addJob("latency", { id }), {
    clock,
    transactions: transactionsOf(url)
  })
}

/** A bare JetStream consumer in another process (pickupLib.ts's startBareJetStream), jobs published to it from this one. */
const bareJetStreamCase = async (resources: Resources, nats: BenchQueue & { kind: "nats" }): Promise<Case> => {
  const prefix = newPrefix()
  resources.defer(() => deleteBrokerNames(nats, prefix))
  const clock = await startWorkerProcess(resources, "", nats, prefix, true)
  const publisher = await bareJetStreamPublisher(nats.url, prefix)
  resources.defer(() => publisher.close())
  return newCase("nats_bare", `bare JetStream consumer (${nats.url}), in another process`, publisher.publish, { clock })
}

/**
 * BullMQ, the reference of pickup_redis_p50: a Worker of concurrency 1 in another process
 * (pickupBullmqWorker.ts), as the engine's worker is, on a queue of the run's own on the same
 * Redis; each job added with `Queue.add` (BullMQ's one-script add), timed to its processor's call.
 */
const bullmqCase = async (resources: Resources, url: string): Promise<Case> => {
  const prefix = bullmqPrefix()
  const queue = await openBullmqQueue(url, prefix)
  resources.defer(() => removeBullmqQueue(queue, url, prefix))
  const clock = await startPickupProcess(resources, "pickupBullmqWorker.ts", { BENCH_REDIS_URL: url, BENCH_BULLMQ_PREFIX: prefix })
  return newCase("bullmq", `BullMQ ${bullmqVersion} (${url}), worker in another process`, (id) => queue.add("latency", { id }), { clock })
}

/**
 * The store floor on `broker` (pickupFloor.ts): a job's row committed, its id published, received
 * in another process (pickupFloorWorker.ts), its row claimed by id and committed, then the start.
 */
const floorCase = async (resources: Resources, broker: FloorBroker, brokerUrl: string): Promise<Case> => {
  const url = await openDatabase(resources, `pickupfloor${broker}`)
  const prefix = newPrefix()
  resources.defer(() => deleteBrokerNames({ kind: broker, url: brokerUrl }, prefix))
  const submitter = await floorSubmitter(url, broker, brokerUrl, prefix)
  resources.defer(() => submitter.close())
  const clock = await startPickupProcess(resources, "pickupFloorWorker.ts", {
    BENCH_DATABASE_URL: url,
    BENCH_FLOOR_BROKER: broker,
    BENCH_FLOOR_BROKER_URL: brokerUrl,
    BENCH_PICKUP_PREFIX: prefix
  })
  return newCase(`${broker}_floor`, `store floor on ${broker === "redis" ? "Redis" : "NATS"}: a row committed, published, claimed by id and committed, in another process`, submitter.add, { clock })
}

/**
 * A floor of the store queue's pickup from another process (pickupPgFloor.ts): the job committed
 * and notified, heard in another process (pickupPgFloorWorker.ts), one job claimed in queue order
 * and committed, then the start; `bare` on a table of its own (NOTIFY after the commit), `engine`
 * with the engine's statements (its NOTIFY in its submit's), `effect` those through Effect and the
 * engine's PostgreSQL client.
 */
const pgFloorCase = async (resources: Resources, shape: PgFloorShape): Promise<Case> => {
  const url = await openDatabase(resources, `pickuppgfloor${shape}`)
  const submitter = await pgFloorSubmitter(url, shape)
  resources.defer(() => submitter.close())
  const clock = await startPickupProcess(resources, "pickupPgFloorWorker.ts", { BENCH_DATABASE_URL: url, BENCH_PG_FLOOR_SHAPE: shape })
  const label = {
    bare: "store queue's floor, bare: a row INSERTed and committed, NOTIFY after it, heard in another process, one row claimed in queue order and committed",
    engine: "store queue's floor, the engine's statements: its submit (its NOTIFY in it) committed, heard in another process, its claim (one job, queue order) committed",
    effect: "store queue's floor on the engine's framework: the engine's statements through Effect's runtime and the engine's PostgreSQL client (@effect/sql-pg), nothing of the engine"
  }[shape]
  return newCase(`pgfloor_${shape}`, label, submitter.add, { clock })
}

const within = <A>(promise: Promise<A>, timeoutMs: number, what: string): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${timeoutMs} ms`)), timeoutMs)))
  ]).finally(() => clearTimeout(timer))
}

/** Queues one job of the case and answers how long it waited to start and how long its submit took, then pauses. */
const sampleOnce = async (c: Case): Promise<readonly [latency: number, submit: number]> => {
  const id = `${c.key}-${c.next++}`
  const seen = new Promise<number>((resolve) => starts.set(id, resolve))
  try {
    const t0 = performance.now()
    await c.add(id)
    const added = performance.now()
    const t1 = await within(seen, SEEN_TIMEOUT_MS, `${c.label}: job ${id} did not start`)
    return [t1 - t0, added - t0]
  } finally {
    starts.delete(id)
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
  }
}

/** Warms every case up, then takes `samples` of each, one job of each case after the other. */
const timeAll = async (cases: ReadonlyArray<Case>, samples: number) => {
  for (const c of cases) {
    for (let i = 0; i < WARMUP; i++) await sampleOnce(c)
  }
  // Late NOTIFYs of the warm-up are heard, and its transactions published, before the counts start.
  const counted = cases.filter((c) => c.transactions !== undefined)
  await new Promise((resolve) => setTimeout(resolve, counted.length > 0 ? STATS_FLUSH_MS : 200))
  const queuedBefore = new Map(cases.map((c) => [c, c.queued?.() ?? 0]))
  const transactionsBefore = new Map(await Promise.all(counted.map(async (c) => [c, await c.transactions!()] as const)))
  for (let i = 0; i < samples; i++) {
    if (i % Math.max(1, Math.floor(samples / PARTS)) === 0) log(`pickup: job ${i + 1} of ${samples} of each of ${cases.length} cases`)
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(i + k) % cases.length]!
      const [latency, submitted] = await sampleOnce(c)
      c.latencies.push(latency)
      c.submits.push(submitted)
    }
  }
  await new Promise((resolve) => setTimeout(resolve, counted.length > 0 ? STATS_FLUSH_MS : 200))
  /** Per case timed: submits that sent NOTIFY (queued, not handed off), and its database's transactions per job. */
  return {
    queued: new Map(cases.map((c) => [c, (c.queued?.() ?? 0) - queuedBefore.get(c)!])),
    transactionsPerJob: new Map(await Promise.all(counted.map(async (c) => [c, ms(((await c.transactions!()) - transactionsBefore.get(c)!) / samples)] as const)))
  }
}

/** The p50 of each of PARTS consecutive parts of `latencies` (in the order taken). */
const p50ByPart = (latencies: ReadonlyArray<number>): Array<number> => {
  const parts = Math.max(1, Math.min(PARTS, latencies.length))
  return Array.from({ length: parts }, (_, p) =>
    ms(percentile(latencies.slice(Math.floor((p * latencies.length) / parts), Math.floor(((p + 1) * latencies.length) / parts)), 50)))
}

export const pickup = async () => {
  const samples = settings.pickupSamples
  // BENCH_PICKUP_CASES=store: the store queue's three cases and graphile-worker only (no broker), for quicker A/B runs;
  // BENCH_PICKUP_CASES=remote: only the store queue with the worker in another process, beside graphile-worker.
  const selected = process.env.BENCH_PICKUP_CASES
  const remoteOnly = selected === "remote"
  const storeOnly = selected === "store" || remoteOnly
  const redis: BenchQueue = { kind: "redis", url: brokerUrls.redis }
  const nats = { kind: "nats", url: brokerUrls.nats } as const
  const store: BenchQueue = { kind: "store" }
  const resources = new Resources()
  try {
    log("pickup: setting up every case (each on a database of its own)")
    const local = remoteOnly ? undefined : {
      handOff: await engineCase(resources, "handoff", "store queue, one engine (hand-off)", store, "oneEngine", { countQueued: true }),
      noHandOff: await engineCase(resources, "nohandoff", "store queue, two engines in one process (no hand-off)", store, "twoEngines")
    }
    const remote = await engineCase(resources, "remote", "store queue, worker in another process", store, "twoProcesses")
    const pgFloors = {
      bare: await pgFloorCase(resources, "bare"),
      engine: await pgFloorCase(resources, "engine"),
      effect: await pgFloorCase(resources, "effect")
    }
    const brokers = storeOnly ? undefined : {
      redisRemote: await engineCase(resources, "redis", `Redis (${redis.url}), worker in another process`, redis, "twoProcesses"),
      redisLocal: await engineCase(resources, "redis1", `Redis (${redis.url}), one engine`, redis, "oneEngine"),
      natsRemote: await engineCase(resources, "nats", `NATS (${nats.url}), worker in another process`, nats, "twoProcesses"),
      natsLocal: await engineCase(resources, "nats1", `NATS (${nats.url}), one engine`, nats, "oneEngine"),
      natsBare: await bareJetStreamCase(resources, nats),
      bullmq: await bullmqCase(resources, redis.url),
      redisFloor: await floorCase(resources, "redis", redis.url),
      natsFloor: await floorCase(resources, "nats", nats.url)
    }
    const unbatched = await graphileCase(resources, "unbatched")
    const batched = await graphileCase(resources, "batched")
    const graphileRemote = await graphileRemoteCase(resources)
    const cases = [...(local === undefined ? [] : [local.handOff, local.noHandOff]), remote, pgFloors.bare, pgFloors.engine, pgFloors.effect, ...(brokers === undefined ? [] : Object.values(brokers)), unbatched, batched, graphileRemote]
    log(`pickup: ${samples} sequential jobs of each case (${WARMUP} more to warm up): ${cases.map((c) => c.label).join("; ")}`)
    const { queued, transactionsPerJob } = await timeAll(cases, samples)
    // BENCH_PICKUP_DUMP=<file>: every sample of every case, in the order taken, for a closer look.
    const dump = process.env.BENCH_PICKUP_DUMP
    if (dump !== undefined && dump !== "") {
      writeFileSync(dump, JSON.stringify(Object.fromEntries(cases.map((c) => [c.key, c.latencies.map(ms)]))))
    }

    const p50 = (c: Case) => percentile(c.latencies, 50)
    /**
     * The p50s of the two parts of a pickup: the submit until it returned, and the rest (the
     * wake-up, the claim and the start; with a hand-off, the run's start alone), so a ratio says
     * which part differs from the reference's.
     */
    const split = (c: Case) => ({
      submitP50: ms(percentile(c.submits, 50)),
      afterSubmitP50: ms(percentile(c.latencies.map((latency, i) => latency - c.submits[i]!), 50))
    })
    const p99 = (c: Case) => percentile(c.latencies, 99)
    // The better (lower) p50 of the two is the reference; a tie goes to the batched configuration.
    const referenceConfig: GraphileConfigName = p50(batched) <= p50(unbatched) ? "batched" : "unbatched"
    const graphile = referenceConfig === "batched" ? batched : unbatched
    const referenceIs = `graphile-worker 0.18, latencyTest shape (addJob -> task start), the lower p50 of its two configurations: ` +
      `${referenceConfig} (${graphileConfigLabel[referenceConfig]})`
    // How every case was run: the params each figure starts with.
    const shape = { samples, warmup: WARMUP, workers: 1, pauseMs: PAUSE_MS, engineFrom }
    const common = {
      ...shape,
      referenceP99: ms(p99(graphile)),
      referenceMax: ms(percentile(graphile.latencies, 100)),
      referenceSplit: split(graphile),
      referenceConfig,
      batchedReferenceIs: graphileConfigLabel.batched,
      batchedReferenceP50: ms(p50(batched)),
      batchedReferenceP99: ms(p99(batched)),
      unbatchedReferenceIs: graphileConfigLabel.unbatched,
      unbatchedReferenceP50: ms(p50(unbatched)),
      unbatchedReferenceP99: ms(p99(unbatched))
    }
    const tails = (c: Case, reference = graphile) => ({
      engineP99: ms(p99(c)),
      engineMax: ms(percentile(c.latencies, 100)),
      p99Ratio: ms(p99(c) / p99(reference)),
      p50ByFifth: p50ByPart(c.latencies),
      split: split(c),
      ...(c.clock ?? {})
    })
    /** The same queue with one engine submitting to its own worker: no hand-off on a broker. */
    const sameProcess = (c: Case, reference = graphile) => ({
      sameProcessP50: ms(p50(c)),
      sameProcessP99: ms(p99(c)),
      sameProcessMax: ms(percentile(c.latencies, 100)),
      sameProcessRatio: ms(p50(c) / p50(reference)),
      sameProcessP50ByFifth: p50ByPart(c.latencies)
    })
    const figure = (name: string, c: Case, measured: string, params: Record<string, unknown> = {}) =>
      emit({
        figure: name,
        engine: p50(c),
        reference: p50(graphile),
        unit: "ms",
        better: "lower",
        referenceIs,
        target: TARGET,
        params: { measured, ...common, ...tails(c), ...params }
      })

    figure("pickup_remote_p50", remote, "store queue; submits through an engine without workers, the worker's engine in another process (NOTIFY, then a claim)", {
      // The reference's worker runs in this process; graphile-worker's own in another process, for context.
      graphileRemoteIs: graphileRemote.label,
      graphileRemoteP50: ms(p50(graphileRemote)),
      graphileRemoteP99: ms(p99(graphileRemote)),
      graphileRemoteSplit: split(graphileRemote),
      graphileRemoteClock: graphileRemote.clock,
      graphileRemoteToReference: ms(p50(graphileRemote) / p50(graphile)),
      ratioToGraphileRemote: ms(p50(remote) / p50(graphileRemote)),
      // Statements (each its own transaction) per pickup on the case's database, both processes'
      // and the run's and ending's included: what an idle worker's claims cost beside graphile-worker's.
      transactionsPerJob: transactionsPerJob.get(remote),
      graphileRemoteTransactionsPerJob: transactionsPerJob.get(graphileRemote),
      // The floors of this pickup (pickupPgFloor.ts): how close any queue with its design can come to
      // the reference (bare), how close the engine's statements can (engineStatements) and those on
      // the engine's framework and client (frameworkFloor), and the engine to each.
      pgFloorIs: pgFloors.bare.label,
      pgFloorP50: ms(p50(pgFloors.bare)),
      pgFloorSplit: split(pgFloors.bare),
      pgFloorToReference: ms(p50(pgFloors.bare) / p50(graphile)),
      ratioToPgFloor: ms(p50(remote) / p50(pgFloors.bare)),
      engineStatementsIs: pgFloors.engine.label,
      engineStatementsP50: ms(p50(pgFloors.engine)),
      engineStatementsSplit: split(pgFloors.engine),
      engineStatementsToReference: ms(p50(pgFloors.engine) / p50(graphile)),
      ratioToEngineStatements: ms(p50(remote) / p50(pgFloors.engine)),
      frameworkFloorIs: pgFloors.effect.label,
      frameworkFloorP50: ms(p50(pgFloors.effect)),
      frameworkFloorSplit: split(pgFloors.effect),
      frameworkFloorToReference: ms(p50(pgFloors.effect) / p50(graphile)),
      ratioToFrameworkFloor: ms(p50(remote) / p50(pgFloors.effect))
    })
    if (local === undefined) return
    const { handOff, noHandOff } = local
    const gain = (withIt: number, without: number) => ms(1 - withIt / without)
    figure("pickup_p50", handOff, "store queue; one engine, its idle worker handed the job by the submit (local hand-off)", {
      handOff: {
        // p50 without the hand-off (pickup_no_handoff_p50) vs with it, this run; gain = 1 - with / without.
        withP50: ms(p50(handOff)),
        withoutP50: ms(p50(noHandOff)),
        gain: gain(p50(handOff), p50(noHandOff)),
        withP99: ms(p99(handOff)),
        withoutP99: ms(p99(noHandOff)),
        p99Gain: gain(p99(handOff), p99(noHandOff)),
        gainByFifth: p50ByPart(handOff.latencies).map((w, r) => gain(w, p50ByPart(noHandOff.latencies)[r]!)),
        // Submits of pickup_p50 the store wrote as the idle worker's claim (the rest were queued: NOTIFY, then a claim).
        handedOff: samples - queued.get(handOff)!,
        threshold: HAND_OFF_THRESHOLD,
        thresholdIs: "the issue: the local hand-off stays only if it improves pickup p50 by 20 % or more"
      }
    })
    figure(
      "pickup_no_handoff_p50",
      noHandOff,
      "store queue; one process, no hand-off: submits through an engine without workers, a second engine's worker woken by NOTIFY, then a claim"
    )
    if (brokers === undefined) return
    const { bullmq, natsBare, natsFloor, natsLocal, natsRemote, redisFloor, redisLocal, redisRemote } = brokers
    /**
     * The floor a job kept in PostgreSQL has on the broker (pickupFloor.ts), beside the broker's
     * reference (`reference`): its p50, its ratio to that reference, and the engine's to it.
     */
    const storeFloor = (floor: Case, engine: Case, reference: Case) => ({
      storeFloorIs: floor.label,
      storeFloorP50: ms(p50(floor)),
      storeFloorP99: ms(p99(floor)),
      storeFloorSplit: split(floor),
      storeFloorToReference: ms(p50(floor) / p50(reference)),
      ratioToStoreFloor: ms(p50(engine) / p50(floor))
    })
    // On Redis the reference is BullMQ on the same Redis (issue 34), graphile-worker's p50 beside it.
    emit({
      figure: "pickup_redis_p50",
      engine: p50(redisRemote),
      reference: p50(bullmq),
      unit: "ms",
      better: "lower",
      referenceIs: `BullMQ ${bullmqVersion}, a Worker of concurrency 1 in another process (Queue.add -> processor call), node-redis client`,
      target: "<= 1.3 (issue 34: pickup p50 on Redis <= 1.3x BullMQ)",
      params: {
        measured: "Redis Streams queue; submits through an engine without workers (commit, then the publish script), the worker's engine " +
          "in another process (woken by the lanes' bell, one receive script, then a claim by id)",
        ...shape,
        referenceP99: ms(p99(bullmq)),
        referenceMax: ms(percentile(bullmq.latencies, 100)),
        referenceSplit: split(bullmq),
        referenceP50ByFifth: p50ByPart(bullmq.latencies),
        referenceClockOffsetMs: bullmq.clock?.clockOffsetMs,
        graphileReferenceIs: referenceIs,
        graphileP50: ms(p50(graphile)),
        graphileRatio: ms(p50(redisRemote) / p50(graphile)),
        ...tails(redisRemote, bullmq),
        ...sameProcess(redisLocal, bullmq),
        ...storeFloor(redisFloor, redisRemote, bullmq)
      }
    })
    figure(
      "pickup_nats_p50",
      natsRemote,
      "NATS JetStream queue; submits through an engine without workers (commit, then publish), the worker's engine in another process (pull fetch, then a claim by id)",
      {
        ...sameProcess(natsLocal),
        bareJetStreamIs: natsBare.label,
        bareJetStreamP50: ms(p50(natsBare)),
        bareJetStreamP99: ms(p99(natsBare)),
        bareJetStreamRatio: ms(p50(natsRemote) / p50(natsBare)),
        sameProcessBareJetStreamRatio: ms(p50(natsLocal) / p50(natsBare)),
        bareJetStreamP50ByFifth: p50ByPart(natsBare.latencies),
        bareJetStreamClock: natsBare.clock
      }
    )
    // The issue's NATS reference: the engine's NATS pickup (worker in another process) against a bare JetStream consumer.
    emit({
      figure: "pickup_nats_vs_jetstream_p50",
      engine: p50(natsRemote),
      reference: p50(natsBare),
      unit: "ms",
      better: "lower",
      referenceIs: `${natsBare.label}: publish awaiting its PubAck, to the handler of nats.js consume()`,
      target: "<= 1.3 (issue 34: NATS pickup p50 against a bare JetStream consumer)",
      params: {
        measured: "NATS JetStream queue, worker in another process (pickup_nats_p50) vs a bare JetStream consumer in another process, same run",
        samples,
        engineP99: ms(p99(natsRemote)),
        referenceP99: ms(p99(natsBare)),
        sameProcessP50: ms(p50(natsLocal)),
        sameProcessRatio: ms(p50(natsLocal) / p50(natsBare)),
        graphileP50: ms(p50(graphile)),
        ...storeFloor(natsFloor, natsRemote, natsBare)
      }
    })
  } finally {
    await resources.releaseAll()
  }
}
