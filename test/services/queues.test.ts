import { PgClient } from "@effect/sql-pg"
import { Clock, Effect, Exit, Fiber, Layer, ManagedRuntime, Option, Redacted, Scope, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { makeEngine } from "../../entries/index.js"
import { memoryFiles, memoryQueue, memoryStore } from "../../entries/memory.js"
import { postgresStore } from "../../entries/postgres.js"
import { sqliteStore } from "../../entries/sqlite.js"
import { jobsChannel } from "../../adapters/sql/SqlJobs.js"
import { QueueError } from "../../src/domain/errors.js"
import type { JobId, RequestId } from "../../src/domain/ids.js"
import type { Engine, StorePorts } from "../../src/engine.js"
import { JobQueue } from "../../src/ports/JobQueue.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"
import { Catalog } from "../../src/services/Catalog.js"
import { Jobs } from "../../src/services/Jobs.js"
import { brokerVisibilityMs, Worker } from "../../src/services/Worker.js"
import { redisQueue } from "genjobs/redis"
import { natsQueue } from "genjobs/nats"
import { unlimitedDemoCatalog } from "../support/demoCatalog.js"
import { demoCaller } from "../support/engineLayer.js"
import { deleteStreams, natsAvailable, TEST_NATS_URL } from "../support/nats.js"
import { deleteKeysMatching, redisAvailable, TEST_REDIS_URL } from "../support/redis.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"

const MODEL = "demo/text-gen/text-to-text"

/** Counts starts per job; each generation finishes in its start. */
const countingProvider = () => {
  const starts = new Map<string, number>()
  const provider: GenerationProvider = {
    start: ({ job }) =>
      Effect.sync(() => {
        starts.set(job.id, (starts.get(job.id) ?? 0) + 1)
        return { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const
      }),
    poll: () => Effect.die("finishes in its start"),
    cancel: () => Effect.void
  }
  return { starts, provider }
}

/** The engine's queue: an optional part, so not in the engine's context type. */
const theQueue = Effect.map(Effect.serviceOption(JobQueue), Option.getOrThrow)

const engines: Array<Engine> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.dispose()))
})

const engineWith = async (
  provider: GenerationProvider,
  parts: { readonly store: Layer.Layer<StorePorts, unknown>; readonly queue?: Layer.Layer<JobQueue, unknown> | undefined },
  settings: Partial<EngineSettings> = {},
  workers = 4
) => {
  const engine = await makeEngine({
    store: parts.store,
    files: memoryFiles({ publicUrl: "http://files.test" }),
    queue: parts.queue,
    providers: { demo: provider },
    workers,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    // A poll this long never finds a job by itself: deliveries, signals and the relay do.
    settings: { pollIntervalMs: 60_000, ...settings }
  })
  engines.push(engine)
  const caller = await engine.run(demoCaller(1_000_000_000, 1_000))
  const submit = (prompt: string) =>
    engine.run(Jobs.use((jobs) => jobs.submit(caller, { model: MODEL, input: { prompt } }, "req_t" as RequestId)))
  const status = (id: JobId) => engine.run(Effect.map(JobRepo.use((repo) => repo.get(id)), (job) => Option.getOrThrow(job).status))
  return { engine, submit, status }
}

const allCompleted = (status: (id: JobId) => Promise<string>, ids: ReadonlyArray<JobId>) =>
  waitFor(async () => (await Promise.all(ids.map(status))).every((s) => s === "completed"), 10_000)

// Under CI an unreachable Redis or NATS throws here and fails the file; elsewhere its runs are skipped.
const [withRedis, withNats] = await Promise.all([redisAvailable(), natsAvailable()])
const redisPrefixes: Array<string> = []
const natsPrefixes: Array<string> = []
afterAll(async () => {
  if (withRedis) await deleteKeysMatching(TEST_REDIS_URL, redisPrefixes.map((prefix) => `${prefix}*`))
  if (withNats) await deleteStreams(TEST_NATS_URL, natsPrefixes.map((prefix) => `${prefix}jobs`))
})
const newPrefix = (made: Array<string>) => {
  const prefix = `genjobs_t_${randomBytes(4).toString("hex")}_`
  made.push(prefix)
  return prefix
}

const pgUrl = await freshPostgresUrl()
const newPgStore = async () => postgresStore({ url: (await freshPostgresUrl())!, tablePrefix: newPrefix([]) })

interface QueueCase {
  readonly name: string
  readonly available: boolean
  readonly store: () => Promise<Layer.Layer<StorePorts, unknown>>
  /** A new broker queue (its own prefix); none: the store is the queue. */
  readonly queue?: (() => Layer.Layer<JobQueue, unknown>) | undefined
}

/** Every queue the engine can run on, each over a store it is used with. */
const cases: ReadonlyArray<QueueCase> = [
  { name: "the store's own, memory", available: true, store: async () => memoryStore() },
  { name: "the store's own, SQLite", available: true, store: async () => sqliteStore({ filename: join(tempDataDir(), "genjobs.db") }) },
  { name: "the store's own, PostgreSQL", available: pgUrl !== undefined, store: newPgStore },
  { name: "memory broker, memory store", available: true, store: async () => memoryStore(), queue: memoryQueue },
  {
    name: "Redis, PostgreSQL store",
    available: withRedis && pgUrl !== undefined,
    store: newPgStore,
    queue: () => redisQueue({ url: TEST_REDIS_URL, tablePrefix: newPrefix(redisPrefixes) })
  },
  {
    name: "NATS, PostgreSQL store",
    available: withNats && pgUrl !== undefined,
    store: newPgStore,
    queue: () => natsQueue({ servers: TEST_NATS_URL, tablePrefix: newPrefix(natsPrefixes) })
  }
]

describe.each(cases)("an engine on a queue: $name", ({ available, queue, store }) => {
  if (!available) {
    it.skip("runs its jobs through the queue (a server it needs is not reachable)", () => undefined)
    return
  }
  const partsOf = async () => ({ store: await store(), queue: queue?.() })

  it("runs every submitted job once, though a broker delivers each of them three times", async () => {
    const { provider, starts } = countingProvider()
    const { engine, status, submit } = await engineWith(provider, await partsOf())
    const ids: Array<JobId> = []
    for (let i = 0; i < 30; i++) ids.push((await submit(`p${i}`)).job.id)
    // Two more deliveries of each: duplicates the store's conditional claim turns away.
    const stored = await engine.run(Effect.forEach(ids, (id) => Effect.map(JobRepo.use((repo) => repo.get(id)), Option.getOrThrow)))
    const again = stored.map((job) => ({ jobId: job.id, accountId: job.accountId }))
    if (queue !== undefined) await engine.run(Effect.flatMap(theQueue, (broker) => Effect.andThen(broker.publish(again), broker.publish(again))))
    expect(await allCompleted(status, ids)).toBe(true)
    expect(ids.map((id) => starts.get(id))).toEqual(ids.map(() => 1))
    // Started after it was submitted: a claim takes its time after the wait for a delivery.
    const ended = await engine.run(Effect.forEach(ids, (id) => Effect.map(JobRepo.use((repo) => repo.get(id)), Option.getOrThrow)))
    expect(ended.filter((job) => job.startedAt! < job.createdAt).map((job) => job.id)).toEqual([])
  })

  // A broker's only: the store's own queue has no publish to lose.
  if (queue !== undefined) it("runs a job whose publish failed: the relay publishes it once it waited its grace", async () => {
    const { provider, starts } = countingProvider()
    let refusals = 1
    // A broker that refuses the first publish (the submit's), then takes the relay's.
    const flaky = Layer.effect(
      JobQueue,
      JobQueue.useSync((queue) =>
        JobQueue.of({
          ...queue,
          publish: (jobs) =>
            refusals-- > 0 ? Effect.fail(new QueueError({ message: "broker down" })) : queue.publish(jobs)
        }))
    ).pipe(Layer.provide(queue()))
    const { status, submit } = await engineWith(provider, { store: await store(), queue: flaky }, { queueRelayGraceMs: 300, queueRelayIntervalMs: 100 })
    const { job } = await submit("lost publish")
    expect(job.status).toBe("pending")
    expect(await allCompleted(status, [job.id])).toBe(true)
    expect(starts.get(job.id)).toBe(1)
  })

  // The brokers' fair shares (the store's own queue keeps its own order).
  if (queue !== undefined) it("starts an account's jobs in turn with another's backlog: its k-th start within the first 2k", async () => {
    const RUNNERS = 3
    const started: Array<JobId> = []
    let open: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (open = resolve))
    // Every start waits at the gate until it opens: the first RUNNERS hold the runners while the backlogs queue up.
    const provider: GenerationProvider = {
      start: ({ job }) =>
        Effect.promise(() => {
          started.push(job.id)
          return gate
        }).pipe(Effect.as({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const)),
      poll: () => Effect.die("finishes in its start"),
      cancel: () => Effect.void
    }
    const { engine, status, submit } = await engineWith(provider, await partsOf(), {}, RUNNERS)
    const fromA: Array<JobId> = []
    for (let i = 0; i < RUNNERS; i++) fromA.push((await submit(`a${i}`)).job.id)
    expect(await waitFor(() => started.length === RUNNERS, 10_000)).toBe(true)
    for (let i = RUNNERS; i < 40; i++) fromA.push((await submit(`a${i}`)).job.id)
    const other = await engine.run(demoCaller(1_000_000_000, 1_000))
    const fromB: Array<JobId> = []
    for (let i = 0; i < 5; i++) {
      fromB.push((await engine.run(Jobs.use((jobs) => jobs.submit(other, { model: MODEL, input: { prompt: `b${i}` } }, "req_t" as RequestId)))).job.id)
    }
    open()
    expect(await allCompleted(status, [...fromA, ...fromB])).toBe(true)
    const after = started.slice(RUNNERS)
    expect(new Set(started).size).toBe(45)
    // B's k-th start, in the order the jobs started (a batch's jobs start in any order).
    const bStarts = after.flatMap((id, at) => (fromB.includes(id) ? [at] : []))
    expect(bStarts).toHaveLength(5)
    bStarts.forEach((at, k) => expect(at).toBeLessThan(2 * (k + 1)))
  })

  it("hands a job whose holder went silent to another worker once its lease and the delivery's visibility pass", async () => {
    const { provider, starts } = countingProvider()
    // A short poll: on the store's own queue, reclaiming an expired lease waits for a poll.
    const { engine, status, submit } = await engineWith(provider, await partsOf(), { leaseMs: 500, pollIntervalMs: 200 }, 0)
    const { job } = await submit("taken over")
    // A worker of another process takes the job (from the broker, or the store), claims it and dies without a word.
    const claimed = await engine.run(Effect.scoped(Effect.gen(function*() {
      const repo = yield* JobRepo
      const now = yield* Clock.currentTimeMillis
      const claim = { workerId: "wrk_doomed", now, leaseMs: 500, maxAttempts: 3 }
      if (queue === undefined) return yield* repo.claimBatch({ ...claim, limit: 1 })
      const consumer = yield* (yield* theQueue).consume({ name: "doomed", visibilityMs: brokerVisibilityMs(500) })
      const [delivery] = yield* consumer.receive(1, 1_000)
      return yield* repo.claimIds([delivery!.jobId], claim)
    })))
    expect(claimed.map((j) => j.id)).toEqual([job.id])
    // This process's workers start now: the queue gives them the job again, and the store lets them
    // take the job over. Its provider start was begun by the dead worker and never confirmed,
    // so the job fails with a refund rather than risk a second start.
    const scope = Effect.runSync(Scope.make())
    await engine.run(Scope.provide(Worker.use((worker) => worker.start(2)), scope))
    try {
      expect(await waitFor(async () => (await status(job.id)) === "failed", 10_000)).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    const stored = await engine.run(Effect.map(JobRepo.use((repo) => repo.get(job.id)), Option.getOrThrow))
    expect(stored.attempts).toBe(2)
    expect(starts.get(job.id)).toBeUndefined()
  })
})

describe("PostgreSQL submits and NOTIFY", () => {
  if (pgUrl === undefined) {
    it.skip("NOTIFYs only for the store's own queue (PostgreSQL is not reachable)", () => undefined)
    return
  }

  /**
   * What the store's jobs channel carried while `act` ran: markers sent before (once one is heard,
   * LISTEN is in place) and after it (heard last, as notifications come in commit order) bound it.
   * A submit that is not batched notifies after it answered, so the after marker waits for
   * `expected` to be heard first (at most 10 s).
   */
  const heardDuring = async (url: string, prefix: string, act: () => Promise<void>, expected: string | undefined) => {
    const channel = jobsChannel(prefix)
    const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
    const heard: Array<string> = []
    try {
      const listener = runtime.runFork(PgClient.PgClient.use((client) =>
        Effect.scoped(Effect.flatMap(client.listen(channel), (notifications) =>
          Stream.runForEach(Stream.fromQueue(notifications), ({ payload }) => Effect.sync(() => heard.push(payload)))))))
      const mark = (payload: string) =>
        runtime.runPromise(PgClient.PgClient.use((sql) => sql`SELECT pg_notify(${channel}, ${payload})`))
      expect(await waitFor(async () => {
        await mark("before")
        return heard.includes("before")
      }, 10_000)).toBe(true)
      const from = heard.length
      await act()
      if (expected !== undefined) await waitFor(() => heard.slice(from).includes(expected), 10_000)
      await mark("after")
      expect(await waitFor(() => heard.includes("after"), 10_000)).toBe(true)
      runtime.runFork(Fiber.interrupt(listener))
      return heard.slice(from, heard.indexOf("after")).filter((payload) => payload !== "before")
    } finally {
      await runtime.dispose()
    }
  }

  it.each([
    // Each plain submit's statement notifies as it commits, and nothing after it: one a submit.
    { name: "the store's own queue: each plain submit's statement wakes its claimers, once", broker: false, gated: false, expected: "jobs" },
    // A gated submit (here a version's rate limits) is not batched: it asks after its commit, and
    // submits asking while a NOTIFY is on its way share the next one: 1 to 3 for the 3 submits.
    { name: "the store's own queue: gated submits wake its claimers after they answered", broker: false, gated: true, expected: "jobs" },
    { name: "with a broker, a submit sends nothing on the channel (no worker listens)", broker: true, gated: false, expected: undefined },
    { name: "with a broker, a gated submit sends nothing on the channel either", broker: true, gated: true, expected: undefined }
  ])("$name", async ({ broker, expected, gated }) => {
    const url = (await freshPostgresUrl())!
    const prefix = newPrefix([])
    // No workers: a submit is never handed off to an idle one (a hand-off wakes no one either).
    const { engine, submit } = await engineWith(
      countingProvider().provider,
      { store: postgresStore({ url, tablePrefix: prefix }), queue: broker ? memoryQueue() : undefined },
      {},
      0
    )
    // The demo catalog's versions have rate limits, which gate every submit: the plain case has none.
    if (!gated) await engine.run(Catalog.use((catalog) => catalog.replace(unlimitedDemoCatalog())))
    const heard = await heardDuring(url, prefix, async () => {
      // One after the other: each plain submit is a batch, and a statement, of its own.
      for (let i = 0; i < 3; i++) expect((await submit(`n${i}`)).job.status).toBe("pending")
    }, expected)
    if (expected === undefined) expect(heard).toEqual([])
    else {
      expect(new Set(heard)).toEqual(new Set([expected]))
      if (gated) {
        expect(heard.length).toBeGreaterThanOrEqual(1)
        expect(heard.length).toBeLessThanOrEqual(3)
      } else expect(heard.length).toBe(3)
    }
  })
})
