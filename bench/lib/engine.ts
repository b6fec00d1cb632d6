import { Effect, Layer, Redacted, References } from "effect"
import {
  Admin,
  Auth,
  type Caller,
  Catalog,
  type Engine,
  type EngineOptions,
  type GenerationProvider,
  type JobQueue,
  Jobs,
  makeEngine,
  type StorePorts
} from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { natsQueue } from "genjobs/nats"
import { postgresStore } from "genjobs/postgres"
import { redisQueue } from "genjobs/redis"
import { BENCH_ACCOUNT, benchCatalog, benchModel } from "../catalog.js"

/** The provider id of the bench catalog in engines built here. */
export const BENCH_PROVIDER = "bench"

/** Makes nothing, in one call: the figures measure the queue, not a provider. */
export const noopProvider: GenerationProvider = {
  start: () => Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } }),
  poll: () => Effect.die("the no-op provider finishes in its start"),
  cancel: () => Effect.void
}

export const TABLE_PREFIX = "genjobs_"

/**
 * The engine from its public entries on PostgreSQL: workers only (no webhook dispatchers, no
 * upload sweeper), so a figure times the queue and nothing else. Files stay in memory: the no-op
 * provider writes none.
 */
/** Which queue the engine runs on: PostgreSQL's own (the store), or a broker at a URL. */
export type BenchQueue =
  | { readonly kind: "store" }
  | { readonly kind: "redis"; readonly url: string }
  | { readonly kind: "nats"; readonly url: string }

const queueLayer = (queue: BenchQueue | undefined, prefix: string) =>
  queue === undefined || queue.kind === "store"
    ? undefined
    : queue.kind === "redis"
    ? redisQueue({ url: queue.url, tablePrefix: prefix })
    : natsQueue({ url: queue.url, tablePrefix: prefix })

/**
 * The engine of the figures from its public entries on `store`: `workers` worker fibers (and
 * `queue`, `settings` when given), the no-op provider unless another, files in memory, no webhook
 * dispatchers, no upload sweeper, warnings and errors only.
 */
export const benchEngine = (
  store: Layer.Layer<StorePorts, unknown>,
  options: {
    readonly workers: number
    readonly provider?: GenerationProvider
    readonly queue?: Layer.Layer<JobQueue, unknown> | undefined
    readonly settings?: EngineOptions["settings"]
  }
): Promise<Engine> =>
  makeEngine({
    store,
    ...(options.queue === undefined ? {} : { queue: options.queue }),
    files: memoryFiles({ publicUrl: "http://bench.invalid" }),
    providers: { [BENCH_PROVIDER]: options.provider ?? noopProvider },
    workers: options.workers,
    webhookDispatchers: 0,
    uploadSweeper: false,
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    // Warnings and errors only, as graphile-worker's quietLogger beside it: per-job info lines to a
    // console would time the logger, and the bench's stdout is for its JSON lines.
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })

/**
 * The engine of the figures on PostgreSQL (benchEngine). `prefix` (default TABLE_PREFIX) names
 * its tables, and its broker's names unless `queuePrefix` does: figures on the shared brokers
 * give each run names of its own.
 */
export const startPgEngine = (
  url: string,
  options: {
    readonly workers: number
    readonly provider?: GenerationProvider
    readonly queue?: BenchQueue
    readonly prefix?: string
    readonly queuePrefix?: string
  }
): Promise<Engine> =>
  benchEngine(postgresStore({ url: Redacted.make(url), tablePrefix: options.prefix ?? TABLE_PREFIX }), {
    workers: options.workers,
    ...(options.provider === undefined ? {} : { provider: options.provider }),
    queue: queueLayer(options.queue, options.queuePrefix ?? options.prefix ?? TABLE_PREFIX)
  })

/** Loads the bench catalog and makes `accounts` funded accounts; returns a signed-in caller for each. */
export const seed = (engine: Engine, accounts: number): Promise<ReadonlyArray<Caller>> =>
  engine.run(Effect.gen(function*() {
    yield* (yield* Catalog).replace(benchCatalog(BENCH_PROVIDER))
    const admin = yield* Admin
    const auth = yield* Auth
    return yield* Effect.forEach(Array.from({ length: accounts }, (_, i) => i), (i) =>
      Effect.gen(function*() {
        const account = yield* admin.createAccount({ name: `bench-${i}`, ...BENCH_ACCOUNT, segments: [], allowedModels: [], discounts: [] })
        const key = yield* admin.createKey(account.id, { name: "bench", scopes: [], allowedIPs: [], expiresAt: null })
        return yield* auth.authenticate({ authorization: `Bearer ${key.secret}` })
      }))
  }))

type RequestIdOf = Parameters<Jobs["Service"]["submit"]>[2]

let requests = 0

/** One submit through the engine's own path (Jobs.submit: validation, pricing, admission, insert, wake-up). */
export const submit = (engine: Engine, caller: Caller, prompt: string) =>
  engine.run(Effect.flatMap(Jobs, (jobs) =>
    jobs.submit(caller, { model: benchModel(BENCH_PROVIDER), input: { prompt } }, `req_bench_${++requests}` as RequestIdOf)))

/** Submits `count` jobs over the callers, `parallel` at a time. */
export const submitMany = async (engine: Engine, callers: ReadonlyArray<Caller>, count: number, parallel: number) => {
  let next = 0
  const lane = async () => {
    while (next < count) {
      const i = next++
      await submit(engine, callers[i % callers.length]!, `p${i}`)
    }
  }
  await Promise.all(Array.from({ length: parallel }, lane))
}
