/**
 * http_submit: POST /v1/jobs/submit for a fixed time at each client count of
 * BENCH_HTTP_CONNECTIONS (1, 8 and 64 unless set) against the bundled server (API only:
 * WORKER_CONCURRENCY=0, so it measures admission and insert, not work), over 8 accounts and
 * over 1 (one account's submits serialise on its row), beside a bare node:http server doing one
 * INSERT per request on the same database kind at the same counts. PostgreSQL, then SQLite. Once
 * the engine is stopped, a bare server doing the engine's own submit writes per request on the
 * engine's database and accounts (bareServers/pgSameWork.ts, sqliteSameWork.ts) at the same
 * counts: in the 8-account figures' params, what the spec's writes cost without the engine; on
 * PostgreSQL also the same work on the engine's framework and client (httpApiPgSameWork.ts), the
 * floor of any engine built on them.
 *
 * With BENCH_HTTP_BESIDE=<another checkout, its `dist/` built>, it compares two builds instead:
 * this checkout's bundled server and that one's, up at once (8 accounts each, a warm-up each),
 * then BENCH_HTTP_ROUNDS (8) bursts of BENCH_HTTP_BURST_SECONDS (3) at the first client count on
 * one and then the other, the order swapped every round. On a machine shared with other work,
 * two runs of the plain bench moved the server's CPU per submit by 70 % at the same build; the
 * pairs see the same load, so their ratio resolves what single runs cannot. BENCH_HTTP_BESIDE_STORES
 * (`pg,sqlite`) picks the stores; BENCH_HTTP_BESIDE_ENV (a JSON object) adds environment to the
 * other server only: with BENCH_HTTP_BESIDE=. it compares one build under two settings
 * (`{"LOG_LEVEL":"none"}`: what the log lines cost).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { benchCatalog, benchModel } from "./catalog.js"
import { type CpuSample, cpuPerRequest, processCpuMs } from "./lib/cpu.js"
import { settings } from "./lib/env.js"
import { type LoadResult, probeSubmit, submitLoad } from "./lib/load.js"
import { ownDatabaseCpu, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import { makeAccounts, type RunningServer, startBareServer, startBuiltServerAt, startBundledServer } from "./lib/server.js"

const MODEL = benchModel("demo")

interface Measured extends LoadResult {
  /**
   * µs of CPU per answered submit: the server process, every PostgreSQL process on the machine,
   * the load generator; and `ownDatabase`, only the backends of the server's own database.
   */
  readonly cpu: CpuSample & { readonly ownDatabase?: number }
}

/** The servers that had their first, longer warm-up. */
const warmed = new WeakSet<RunningServer>()

/**
 * A warm-up (JIT, pools, caches; not reported), then the measured run. A server's first is
 * httpServerWarmupSeconds long, so that whichever case it measures first (8 accounts, then 1 on
 * the same engine) is measured at its steady cost, as the later ones are.
 */
const measure = async (
  server: RunningServer,
  keys: ReadonlyArray<string>,
  connections: number,
  label: string,
  database?: string
): Promise<Measured> => {
  const url = server.url
  await probeSubmit(url, keys[0]!, MODEL)
  const common = { url, keys, model: MODEL, connections, label: `${label}, ${connections} clients` }
  if (!warmed.has(server) && settings.httpServerWarmupSeconds > 0) {
    // At 8 clients whatever the case's count: the steady state comes after a number of requests, which 1 client is slow to send.
    await submitLoad({ ...common, connections: Math.max(8, connections), seconds: settings.httpServerWarmupSeconds, warmup: true })
  }
  warmed.add(server)
  if (settings.httpWarmupSeconds > 0) await submitLoad({ ...common, seconds: settings.httpWarmupSeconds, warmup: true })
  const own = database === undefined ? undefined : await ownDatabaseCpu(database)
  const cpu = cpuPerRequest(server.pid)
  const result = await submitLoad({ ...common, seconds: settings.httpSeconds })
  const sample = cpu(result.ok)
  return { ...result, cpu: own === undefined ? sample : { ...sample, ownDatabase: await own(result.ok) } }
}

const withServer = async <A>(start: Promise<RunningServer>, body: (server: RunningServer) => Promise<A>): Promise<A> => {
  const server = await start
  try {
    return await body(server)
  } finally {
    await server.stop()
  }
}

const round = (n: number) => Math.round(n * 10) / 10

/** Each client count in turn on one server: one Measured per count of settings.httpClientCounts. */
const measureCounts = async (server: RunningServer, keys: ReadonlyArray<string>, label: string, database?: string) => {
  const measured: Array<Measured> = []
  for (const connections of settings.httpClientCounts) {
    log(`http_submit: ${label}, ${connections} clients`)
    measured.push(await measure(server, keys, connections, label, database))
  }
  return measured
}

const report = (
  store: string,
  accounts: number,
  connections: number,
  engine: Measured,
  bare: Measured,
  target: string | undefined,
  sameWork?: Measured,
  frameworkSameWork?: Measured
) =>
  emit({
    figure: `http_submit_${store}_${accounts}_account${accounts === 1 ? "" : "s"}_${connections}_clients`,
    engine: engine.rps,
    reference: bare.rps,
    unit: "req/s",
    better: "higher",
    referenceIs: `bare node:http + one INSERT per request (${store === "pg" ? "pg" : "node:sqlite"})`,
    ...(target === undefined ? {} : { target }),
    params: {
      connections,
      seconds: settings.httpSeconds,
      serverWarmupSeconds: settings.httpServerWarmupSeconds,
      accounts,
      engineEnv: ENGINE_ENV,
      engineP50Ms: engine.p50,
      engineP99Ms: engine.p99,
      engineNon2xx: engine.non2xx,
      engineRequests: engine.ok,
      referenceP50Ms: bare.p50,
      referenceP99Ms: bare.p99,
      referenceNon2xx: bare.non2xx,
      referenceRps: round(bare.rps),
      // CPU per answered submit in µs, by process; all of them share `cores`, which bounds what throughput is possible.
      engineCpuUsPerRequest: store === "pg" ? engine.cpu : { server: engine.cpu.server, loader: engine.cpu.loader },
      referenceCpuUsPerRequest: store === "pg" ? bare.cpu : { server: bare.cpu.server, loader: bare.cpu.loader },
      // The engine's CPU per submit in bare requests' worth: the 300 µs targets were set where the
      // bare server spent 66-73 µs and its database 98-126 (about 4.3x and 2.7x), and this shared
      // machine's speed moves engine and bare alike (the bare server's µs ranged 51-211 since).
      serverCpuToReference: Math.round((engine.cpu.server / bare.cpu.server) * 100) / 100,
      ...(store === "pg" && engine.cpu.ownDatabase !== undefined && bare.cpu.ownDatabase !== undefined
        ? { databaseCpuToReference: Math.round((engine.cpu.ownDatabase / bare.cpu.ownDatabase) * 100) / 100 }
        : {}),
      ...(sameWork === undefined ? {} : {
        sameWorkIs: store === "pg"
          ? "bare node:http + pg sending the engine's own submit statement per request (bareServers/pgSameWork.ts), on the engine's database"
          : "bare node:http + node:sqlite running the engine's own submit statements in a transaction per request (bareServers/sqliteSameWork.ts), on the engine's database",
        sameWorkRps: round(sameWork.rps),
        sameWorkRatioToReference: Math.round((sameWork.rps / bare.rps) * 1000) / 1000,
        engineRatioToSameWork: Math.round((engine.rps / sameWork.rps) * 1000) / 1000,
        sameWorkP50Ms: sameWork.p50,
        sameWorkNon2xx: sameWork.non2xx,
        sameWorkCpuUsPerRequest: store === "pg" ? sameWork.cpu : { server: sameWork.cpu.server, loader: sameWork.cpu.loader }
      }),
      // The same work on the engine's framework and client: the floor of any engine built on them.
      ...(frameworkSameWork === undefined ? {} : {
        frameworkSameWorkIs:
          "the engine's HttpApi shape and PostgreSQL client (Effect, @effect/sql-pg) sending the engine's own submit statement per request, nothing else of the engine (bareServers/httpApiPgSameWork.ts), on the engine's database",
        frameworkSameWorkRps: round(frameworkSameWork.rps),
        frameworkSameWorkRatioToReference: Math.round((frameworkSameWork.rps / bare.rps) * 1000) / 1000,
        engineRatioToFrameworkSameWork: Math.round((engine.rps / frameworkSameWork.rps) * 1000) / 1000,
        frameworkSameWorkP50Ms: frameworkSameWork.p50,
        frameworkSameWorkNon2xx: frameworkSameWork.non2xx,
        frameworkSameWorkCpuUsPerRequest: frameworkSameWork.cpu
      }),
      cores: availableParallelism()
    }
  })

/** The targets, at 8 clients: the others are measured for the curve. */
const targetAt = (connections: number, target: string) => (connections === 8 ? target : undefined)

const reportAll = (
  store: string,
  eight: ReadonlyArray<Measured>,
  one: ReadonlyArray<Measured>,
  bare: ReadonlyArray<Measured>,
  sameWork?: ReadonlyArray<Measured>,
  frameworkSameWork?: ReadonlyArray<Measured>
) =>
  settings.httpClientCounts.forEach((connections, i) => {
    report(store, 8, connections, eight[i]!, bare[i]!, targetAt(connections, ">= 0.17x; server and database <= 300 µs per submit"), sameWork?.[i], frameworkSameWork?.[i])
    report(store, 1, connections, one[i]!, bare[i]!, undefined)
  })

/**
 * Shedding off (STORE_WAIT_MS=0): the figure is the most the server answers, so at 64 clients on
 * a loaded machine requests queue for a connection rather than being answered 503 (which fails
 * the figure). The shedding itself is test/faults/submitShedding's.
 */
const ENGINE_ENV = { WORKER_CONCURRENCY: "0", STORE_WAIT_MS: "0" }

/** The bench model's price (as the engine charged `probe`) and version, as bareServers/pgSameWork.ts charges them. */
const sameWorkEnv = (probe: Record<string, unknown>) => {
  const version = benchCatalog("demo").models[0]!.versions[0]!
  return {
    COST_MICRO_CENTS: String(probe["costMicroCents"]),
    MODEL_VERSION: version.versionId,
    ESTIMATED_MS: String((version.estimatedSeconds ?? 0) * 1000)
  }
}

const postgres = async () => {
  const [eight, one, sameWork, frameworkSameWork] = await withDatabase("http", async (url, name) => {
    const [eight, one, keys, probe] = await withServer(startBundledServer({ ...ENGINE_ENV, DATABASE_URL: url }), async (server) => {
      const keys = await makeAccounts(server.url, 8)
      const probe = await probeSubmit(server.url, keys[0]!, MODEL)
      const eight = await measureCounts(server, keys, "engine pg 8 accounts", name)
      return [eight, await measureCounts(server, keys.slice(0, 1), "engine pg 1 account", name), keys, probe] as const
    })
    // The engine's store work with nothing of the engine: its statement, on its database and accounts.
    const sameWork = await withServer(
      startBareServer("pgSameWork.ts", { DATABASE_URL: url, ...sameWorkEnv(probe) }),
      (server) => measureCounts(server, keys, "same work pg 8 accounts", name)
    )
    const frameworkSameWork = await withServer(
      startBareServer("httpApiPgSameWork.ts", { DATABASE_URL: url, ...sameWorkEnv(probe) }),
      (server) => measureCounts(server, keys, "same work on the framework pg 8 accounts", name)
    )
    return [eight, one, sameWork, frameworkSameWork] as const
  })
  const bare = await withDatabase("bare", (url, name) =>
    withServer(startBareServer("pg.ts", { DATABASE_URL: url }), (server) => measureCounts(server, ["none"], "bare pg", name)))
  reportAll("pg", eight, one, bare, sameWork, frameworkSameWork)
}

const sqlite = async () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-bare-"))
  try {
    // The engine's data directory outside the server's own, so its database outlives the server
    // for the same-work server.
    const dataDir = join(dir, "engine")
    const [eight, one, keys, probe] = await withServer(startBundledServer({ ...ENGINE_ENV, DATA_DIR: dataDir }), async (server) => {
      const keys = await makeAccounts(server.url, 8)
      const probe = await probeSubmit(server.url, keys[0]!, MODEL)
      return [
        await measureCounts(server, keys, "engine sqlite 8 accounts"),
        await measureCounts(server, keys.slice(0, 1), "engine sqlite 1 account"),
        keys,
        probe
      ] as const
    })
    const sameWork = await withServer(
      startBareServer("sqliteSameWork.ts", { SQLITE_FILE: join(dataDir, "genjobs.db"), ...sameWorkEnv(probe) }),
      (server) => measureCounts(server, keys, "same work sqlite 8 accounts")
    )
    const bare = await withServer(
      startBareServer("sqlite.ts", { SQLITE_FILE: join(dir, "bare.db") }),
      (server) => measureCounts(server, ["none"], "bare sqlite")
    )
    reportAll("sqlite", eight, one, bare, sameWork)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const positive = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`)
  return value
}

/** The server's CPU per answered submit of each burst, in µs, and the submits answered. */
interface Bursts {
  readonly perBurst: Array<number>
  cpuMs: number
  submits: number
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** This build's server and the other's (`besideRoot`) on one store, in alternating bursts; one figure. */
const beside = async (
  besideRoot: string,
  store: string,
  envs: readonly [Record<string, string>, Record<string, string>],
  databases?: readonly [string, string]
) => {
  const rounds = positive("BENCH_HTTP_ROUNDS", 8)
  // BENCH_HTTP_ACCOUNTS (8): 1 puts every submit on one account's row.
  const accounts = positive("BENCH_HTTP_ACCOUNTS", 8)
  const seconds = positive("BENCH_HTTP_BURST_SECONDS", 3)
  const connections = settings.httpClientCounts[0]!
  const started: Array<RunningServer> = []
  try {
    started.push(await startBundledServer({ ...ENGINE_ENV, ...envs[0] }))
    started.push(await startBuiltServerAt(besideRoot, { ...ENGINE_ENV, ...envs[1] }))
    const servers = await Promise.all(started.map(async (server) => ({ server, keys: await makeAccounts(server.url, accounts) })))
    for (const { keys, server } of servers) {
      await probeSubmit(server.url, keys[0]!, MODEL)
      await submitLoad({ url: server.url, keys, model: MODEL, connections, seconds: Math.max(5, seconds), label: `${store} warm-up`, warmup: true })
    }
    const bursts: Array<Bursts> = servers.map(() => ({ perBurst: [], cpuMs: 0, submits: 0 }))
    /** The database's own backends' µs per submit of each burst, each side's. */
    const database: Array<Array<number>> = servers.map(() => [])
    for (let round = 0; round < rounds; round++) {
      log(`http_submit beside: ${store}, round ${round + 1} of ${rounds}`)
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const { keys, server } = servers[i]!
        const before = processCpuMs(server.pid)
        const own = databases === undefined ? undefined : await ownDatabaseCpu(databases[i]!)
        const result = await submitLoad({ url: server.url, keys, model: MODEL, connections, seconds, label: `${store} burst` })
        const cpuMs = processCpuMs(server.pid) - before
        if (own !== undefined) database[i]!.push(await own(result.ok))
        bursts[i]!.perBurst.push(Math.round((cpuMs * 1000) / result.ok))
        bursts[i]!.cpuMs += cpuMs
        bursts[i]!.submits += result.ok
      }
    }
    const [mine, theirs] = bursts.map((b) => b.cpuMs * 1000 / b.submits) as [number, number]
    emit({
      figure: `http_submit_${store}_${accounts}_account${accounts === 1 ? "" : "s"}_beside`,
      engine: mine,
      reference: theirs,
      unit: "µs server CPU per submit",
      better: "lower",
      referenceIs: `the bundled server of ${resolve(besideRoot)}, in alternating bursts`,
      params: {
        connections,
        rounds,
        burstSeconds: seconds,
        medianRatio: Math.round((median(bursts[0]!.perBurst) / median(bursts[1]!.perBurst)) * 1000) / 1000,
        engineBursts: bursts[0]!.perBurst,
        referenceBursts: bursts[1]!.perBurst,
        ...(databases === undefined ? {} : {
          engineDatabaseUsPerSubmit: median(database[0]!),
          referenceDatabaseUsPerSubmit: median(database[1]!),
          engineDatabaseBursts: database[0]!,
          referenceDatabaseBursts: database[1]!
        }),
        engineSubmits: bursts[0]!.submits,
        referenceSubmits: bursts[1]!.submits,
        loadAverage: Math.round(loadavg()[0]! * 10) / 10
      }
    })
  } finally {
    for (const server of started) await server.stop()
  }
}

export const httpSubmit = async () => {
  const besideRoot = process.env.BENCH_HTTP_BESIDE
  if (besideRoot !== undefined && besideRoot !== "") {
    const stores = (process.env.BENCH_HTTP_BESIDE_STORES ?? "pg,sqlite").split(",").map((s) => s.trim())
    const theirEnv = JSON.parse(process.env.BENCH_HTTP_BESIDE_ENV ?? "{}") as Record<string, string>
    if (stores.includes("pg")) {
      await withDatabase("mine", (mine, mineName) =>
        withDatabase("beside", (theirs, theirsName) =>
          beside(besideRoot, "pg", [{ DATABASE_URL: mine }, { ...theirEnv, DATABASE_URL: theirs }], [mineName, theirsName])))
    }
    if (stores.includes("sqlite")) await beside(besideRoot, "sqlite", [{}, theirEnv])
    return
  }
  await postgres()
  await sqlite()
}
