/**
 * The worker process of the provider_inflight figure: the engine from its public entries on
 * PostgreSQL (or the SQLite file BENCH_SQLITE_FILE) with BENCH_CONCURRENCY worker fibers and the
 * Replicate adapter pointed at the parent's simulator, no HTTP. It reports its CPU time, RSS (and
 * its parts) and event-loop delay (perf_hooks, since the previous report) to the parent every
 * 500 ms. (It no longer counts statements: it did so by wrapping `pg`'s Client.query, and on
 * Effect 4 the store speaks PostgreSQL's protocol itself, without `pg`.)
 */
import { Layer, Redacted, References } from "effect"
import { type Engine, makeEngine } from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { replicateProvider } from "genjobs/providers/replicate"
import { Session } from "node:inspector/promises"
import { join } from "node:path"
import { readFileSync, writeFileSync } from "node:fs"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8"
import { serveParent } from "./lib/child.js"
import { BENCH_PROVIDER, TABLE_PREFIX } from "./lib/engine.js"

export interface InflightCounts {
  readonly type: "counts"
  readonly cpuMicros: number
  readonly rss: number
  /** process.memoryUsage()'s parts of that RSS: V8's heap (used, and reserved with its young generation), and memory outside it (buffers, sockets). */
  readonly heapUsed: number
  readonly heapTotal: number
  readonly external: number
  /** The event loop's delay since the previous report: its 99th percentile and its longest, in ms. */
  readonly loopDelayP99Ms: number
  readonly loopDelayMaxMs: number
  /** With BENCH_INFLIGHT_MAPS=1, where the RSS is by kind of mapping (mapsOf). */
  readonly maps?: MemoryMaps
}

/**
 * The worker's resident memory by kind of mapping (/proc/self/smaps), in bytes: V8's heap spaces
 * as V8 counts them (physical), the main malloc arena (`[heap]`), glibc's thread arenas
 * (anonymous read-write mappings starting on a 64 MiB boundary: HEAP_MAX_SIZE), the other
 * anonymous memory (V8's pages, mmapped malloc chunks, thread stacks) and the files mapped.
 */
export interface MemoryMaps {
  readonly v8Physical: number
  readonly newSpace: number
  readonly oldSpace: number
  readonly mainArena: number
  readonly threadArenas: number
  readonly threadArenaCount: number
  readonly otherAnonymous: number
  readonly files: number
}

const ARENA_ALIGN = 64n * 1024n * 1024n

const mapsOf = (): MemoryMaps => {
  let mainArena = 0
  let threadArenas = 0
  let threadArenaCount = 0
  let otherAnonymous = 0
  let files = 0
  let kind: "main" | "arena" | "anon" | "file" = "anon"
  for (const line of readFileSync("/proc/self/smaps", "latin1").split("\n")) {
    const header = /^([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line)
    if (header !== null) {
      const [, start, perms, inode, name] = header
      kind = name === "[heap]"
        ? "main"
        : inode !== "0" || name!.startsWith("/")
        ? "file"
        : perms!.startsWith("rw") && BigInt(`0x${start}`) % ARENA_ALIGN === 0n
        ? "arena"
        : "anon"
      if (kind === "arena") threadArenaCount++
      continue
    }
    if (!line.startsWith("Rss:")) continue
    const bytes = Number(line.slice(4).trim().split(" ")[0]) * 1024
    if (kind === "main") mainArena += bytes
    else if (kind === "arena") threadArenas += bytes
    else if (kind === "file") files += bytes
    else otherAnonymous += bytes
  }
  const spaces = getHeapSpaceStatistics()
  const space = (name: string) => spaces.find((s) => s.space_name === name)?.physical_space_size ?? 0
  return {
    v8Physical: spaces.reduce((sum, s) => sum + s.physical_space_size, 0),
    newSpace: space("new_space"),
    oldSpace: space("old_space"),
    mainArena,
    threadArenas,
    threadArenaCount,
    otherAnonymous,
    files
  }
}
const MAPS = process.env.BENCH_INFLIGHT_MAPS === "1"

const loopDelay = monitorEventLoopDelay({ resolution: 10 })
loopDelay.enable()

const report = () => {
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  process.send!({
    type: "counts",
    cpuMicros: cpu.user + cpu.system,
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    external: memory.external,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    loopDelayMaxMs: loopDelay.max / 1e6,
    ...(MAPS ? { maps: mapsOf() } : {})
  } satisfies InflightCounts)
  loopDelay.reset()
}
setInterval(report, 500).unref()

/**
 * A CPU profile of the hold alone (BENCH_INFLIGHT_PROFILE_DIR): the parent sends SIGUSR2 once
 * every generation is in flight and again when the first ends (a message would reach
 * serveParent, which takes any but `go` for `stop`); `--cpu-prof` would profile the start burst too.
 */
const profileDir = process.env.BENCH_INFLIGHT_PROFILE_DIR
if (profileDir !== undefined) {
  const session = new Session()
  session.connect()
  let profiling = false
  process.on("SIGUSR2", () => {
    profiling = !profiling
    if (profiling) void session.post("Profiler.enable").then(() => session.post("Profiler.start"))
    else {
      void session.post("Profiler.stop").then(({ profile }) =>
        writeFileSync(join(profileDir, `hold-${process.pid}.cpuprofile`), JSON.stringify(profile))
      )
    }
  })
}

/** A heap snapshot as the hold starts (BENCH_INFLIGHT_HEAP_DIR): at the parent's first SIGUSR2 (as above), not its second. */
const heapDir = process.env.BENCH_INFLIGHT_HEAP_DIR
if (heapDir !== undefined) {
  let taken = false
  process.on("SIGUSR2", () => {
    if (!taken) writeHeapSnapshot(join(heapDir, `hold-${process.pid}.heapsnapshot`))
    taken = true
  })
}

/**
 * An allocation sample of the worker (BENCH_INFLIGHT_ALLOC_DIR): V8's sampling heap profiler from
 * the worker's start, keeping the objects collected since, so it shows what the garbage at the
 * RSS peak is made of; with BENCH_INFLIGHT_ALLOC_PROMOTED=1 it drops those a scavenge collected,
 * leaving what reached the old generation (the garbage that grows the heap until a major GC).
 * Written as burst-<pid>.heapprofile at the parent's first SIGUSR2 (every generation started:
 * the start burst) and all-<pid>.heapprofile at its second (the burst and the hold); the hold is
 * the second less the first. Chrome's memory panel reads them.
 */
const allocDir = process.env.BENCH_INFLIGHT_ALLOC_DIR
if (allocDir !== undefined) {
  const session = new Session()
  session.connect()
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.BENCH_INFLIGHT_ALLOC_PROMOTED !== "1"
  })
  let signals = 0
  process.on("SIGUSR2", () => {
    const name = signals++ === 0 ? "burst" : "all"
    void session.post("HeapProfiler.getSamplingProfile").then(({ profile }) =>
      writeFileSync(join(allocDir, `${name}-${process.pid}.heapprofile`), JSON.stringify(profile))
    )
  })
}

let engine: Engine | undefined

serveParent({
  start: async () => {
    engine = await makeEngine({
      store: process.env.BENCH_SQLITE_FILE === undefined
        ? postgresStore({ url: Redacted.make(process.env.BENCH_DATABASE_URL!), tablePrefix: TABLE_PREFIX })
        : sqliteStore({ filename: process.env.BENCH_SQLITE_FILE, tablePrefix: TABLE_PREFIX }),
      files: memoryFiles({ publicUrl: "http://bench.invalid" }),
      providers: {
        [BENCH_PROVIDER]: replicateProvider({
          apiToken: process.env.BENCH_SIM_TOKEN!,
          baseUrl: process.env.BENCH_SIM_URL!,
          pollIntervalMs: Number(process.env.BENCH_POLL_MS)
        })
      },
      workers: Number(process.env.BENCH_CONCURRENCY),
      webhookDispatchers: 0,
      uploadSweeper: false,
      retentionSweeper: false,
      // The simulator serves its outputs from 127.0.0.1: an explicit opt-in past the address guard.
      settings: { providerOutputAllowPrivate: true },
      // A log line per job would fill the bench's stdout, which carries the figures.
      observability: Layer.succeed(References.MinimumLogLevel, "Warn")
    })
    report()
  },
  stop: async () => {
    await engine?.dispose()
  }
})
