/** Settings of the benchmark, each overridable from the environment for quick runs. */
const int = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${raw}`)
  return value
}

/** A comma-separated list of whole numbers, or `fallback` when unset. */
const ints = (name: string, fallback: ReadonlyArray<number>): ReadonlyArray<number> => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  return raw.split(",").map((part) => {
    const value = Number(part.trim())
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be whole numbers above 0, comma-separated, got ${raw}`)
    return value
  })
}

/**
 * Where this process's `genjobs` comes from: `dist` (what the package ships: `npm run bench` builds
 * it first and runs without `--conditions=genjobs-source`), or `sources` (the TypeScript through
 * tsx, with that condition: esbuild's `keepNames` adds a call per named closure, and its output is
 * not tsc's). The bench's child processes load the engine the same way (lib/child.ts).
 */
export const engineFrom: "dist" | "sources" = import.meta.resolve("genjobs").includes("/dist/") ? "dist" : "sources"

export const settings = {
  /** PostgreSQL server (no database name): the bench creates and drops its own databases there. */
  pgUrl: (process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432").replace(/\/+$/, ""),
  drainJobs: int("BENCH_DRAIN_JOBS", 15_500),
  drainProcesses: int("BENCH_DRAIN_PROCESSES", 2),
  drainConcurrency: int("BENCH_DRAIN_CONCURRENCY", 24),
  /** Connections per process of queue_drain's statements floor (drainStatementsWorker.ts). */
  drainFloorLanes: int("BENCH_DRAIN_FLOOR_LANES", 2),
  /**
   * Jobs each of the statements floor's statements ends and claims: 2 x 48 holds 96 jobs a
   * process, within the 120 an engine worker of 24 fibers holds at most (each claims 4 ahead).
   */
  drainFloorBatch: int("BENCH_DRAIN_FLOOR_BATCH", 48),
  /** The accounts queue_drain's engine submits over, in turn (each its own lane on a broker). */
  drainAccounts: int("BENCH_DRAIN_ACCOUNTS", 8),
  /** Which queues queue_drain runs the engine on, comma-separated: store (PostgreSQL's own), redis, nats. */
  drainQueues: (process.env.BENCH_DRAIN_QUEUES ?? "store,redis,nats").split(",").map((s) => s.trim()).filter((s) => s !== ""),
  /** A second model in the bench catalog, of a limited provider model, that no job uses (bench/catalog.ts). */
  limitedModel: process.env.BENCH_LIMITED_MODEL === "1",
  /** Brokers of queue_drain (shared: each run makes its own keys and streams under a random prefix and deletes them). */
  redisUrl: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
  natsUrl: process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222",
  /** Jobs of server_drain (the bundled server's workers, demo provider); BENCH_DRAIN_JOBS when unset. */
  serverDrainJobs: int("BENCH_SERVER_DRAIN_JOBS", int("BENCH_DRAIN_JOBS", 15_500)),
  pickupSamples: int("BENCH_PICKUP_SAMPLES", 500),
  httpSeconds: int("BENCH_HTTP_SECONDS", 10),
  httpWarmupSeconds: int("BENCH_HTTP_WARMUP_SECONDS", 2),
  /**
   * http_submit: a server's first warm-up, before its first measured run. The bundled server on
   * SQLite, saturating its core, took 10 to 12 s of load to reach its steady CPU per submit
   * (docs/decisions.md, "http_submit measures each server warm").
   */
  httpServerWarmupSeconds: int("BENCH_HTTP_SERVER_WARMUP_SECONDS", 12),
  /** The first of BENCH_HTTP_CONNECTIONS: the clients of every HTTP bench but http_submit and http_floor. */
  httpConnections: ints("BENCH_HTTP_CONNECTIONS", [32])[0]!,
  /** http_submit and http_floor measure each of these client counts, every one beside its reference in the same run. */
  httpClientCounts: ints("BENCH_HTTP_CONNECTIONS", [1, 8, 64]),
  claimPending: int("BENCH_CLAIM_PENDING", 1_000_000),
  claimSamples: int("BENCH_CLAIM_SAMPLES", 200),
  /** Claims stop being sampled after this long (at least 10 are taken). */
  claimSeconds: int("BENCH_CLAIM_SECONDS", 20),
  /** Jobs of the one account whose list list_pages pages through, and pages timed per position. */
  listJobs: int("BENCH_LIST_JOBS", 1_000_000),
  listSamples: int("BENCH_LIST_SAMPLES", 50),
  /** The figure: about 8 minutes on 2 cores (submitted over HTTP while 8 workers run them). */
  rssJobs: int("BENCH_RSS_JOBS", 100_000),
  rssWorkers: int("BENCH_RSS_WORKERS", 8),
  inProcessOps: int("BENCH_IN_PROCESS_OPS", 1_000),
  /** sqlite_drain: the jobs each drain takes, and the ended jobs the second one's file holds before it. */
  sqliteDrainJobs: int("BENCH_SQLITE_DRAIN_JOBS", 10_000),
  sqliteDrainEnded: int("BENCH_SQLITE_DRAIN_ENDED", 200_000),
  /** webhook_claim: the due deliveries a claim is timed beside. */
  webhookBacklog: int("BENCH_WEBHOOK_BACKLOG", 100_000),
  /** webhook_claim_*_waiting_accounts: the accounts beside the claim whose one delivery waits for a retry. */
  webhookWaitingAccounts: int("BENCH_WEBHOOK_WAITING_ACCOUNTS", 5_000),
  /** webhook_drain: the jobs drained, then their webhooks. */
  webhookDrainJobs: int("BENCH_WEBHOOK_DRAIN_JOBS", 4_000),
  /** Status streams one server holds open, spread over this many pending jobs. */
  streams: int("BENCH_STREAMS", 10_000),
  streamJobs: int("BENCH_STREAM_JOBS", 100)
}
