/**
 * http_store_floor: how far the engine's HTTP submit on PostgreSQL can get towards the bare
 * node:http + `pg` server at all, on the framework and store client it is built on. Three servers
 * up at once, each on a database of its own: the bundled server (API only, 8 accounts), the
 * framework floor (bareServers/httpApiPg.ts: the engine's HttpApi shape and PostgreSQL client,
 * one INSERT, nothing else) and the bare server (bareServers/pg.ts). BENCH_HTTP_ROUNDS (3) rounds
 * of BENCH_HTTP_SECONDS at the first client count of BENCH_HTTP_CONNECTIONS on each in turn, the
 * order rotated every round, so the three see the same load. Figures: each server's req/s and
 * server and own-database CPU per answer, summed over the rounds; the engine and the floor each
 * against the bare server. The floor's ratio bounds the engine's: a target above it is out of
 * reach of any engine on this framework and client.
 */
import { loadavg } from "node:os"
import { benchModel } from "./catalog.js"
import { processCpuMs } from "./lib/cpu.js"
import { settings } from "./lib/env.js"
import { probeSubmit, submitLoad } from "./lib/load.js"
import { ownDatabaseCpu, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import { makeAccounts, type RunningServer, startBareServer, startBundledServer } from "./lib/server.js"

const MODEL = benchModel("demo")

interface Side {
  readonly label: string
  readonly server: RunningServer
  readonly database: string
  readonly keys: ReadonlyArray<string>
  answered: number
  seconds: number
  serverMs: number
  databaseUs: number
}

const rounds = () => {
  const value = Number(process.env.BENCH_HTTP_ROUNDS ?? 3)
  if (!Number.isInteger(value) || value <= 0) throw new Error("BENCH_HTTP_ROUNDS must be a positive integer")
  return value
}

const per = (side: Side) => ({
  rps: Math.round(side.answered / side.seconds),
  serverCpuUs: Math.round((side.serverMs * 1000) / Math.max(1, side.answered)),
  databaseCpuUs: Math.round(side.databaseUs / Math.max(1, side.answered))
})

const report = (figure: string, side: Side, bare: Side, what: string, connections: number, count: number) => {
  const mine = per(side)
  const theirs = per(bare)
  emit({
    figure,
    engine: mine.rps,
    reference: theirs.rps,
    unit: "req/s",
    better: "higher",
    referenceIs: "bare node:http + one INSERT per request (pg)",
    params: {
      measured: what,
      connections,
      rounds: count,
      secondsEach: settings.httpSeconds,
      serverCpuUsPerRequest: mine.serverCpuUs,
      databaseCpuUsPerRequest: mine.databaseCpuUs,
      referenceServerCpuUsPerRequest: theirs.serverCpuUs,
      referenceDatabaseCpuUsPerRequest: theirs.databaseCpuUs,
      loadAverage: Math.round(loadavg()[0]! * 10) / 10
    }
  })
}

export const httpStoreFloor = async () => {
  const connections = settings.httpClientCounts[0]!
  const count = rounds()
  log(`http_store_floor: the engine, the framework with one INSERT, bare node:http + pg; ${count} rounds at ${connections} clients`)
  await withDatabase("engine", (engineUrl, engineDb) =>
    withDatabase("floor", (floorUrl, floorDb) =>
      withDatabase("bare", async (bareUrl, bareDb) => {
        const started: Array<RunningServer> = []
        try {
          const engine = await startBundledServer({ WORKER_CONCURRENCY: "0", STORE_WAIT_MS: "0", DATABASE_URL: engineUrl })
          started.push(engine)
          const floor = await startBareServer("httpApiPg.ts", { DATABASE_URL: floorUrl })
          started.push(floor)
          const bare = await startBareServer("pg.ts", { DATABASE_URL: bareUrl })
          started.push(bare)
          const side = (label: string, server: RunningServer, database: string, keys: ReadonlyArray<string>): Side =>
            ({ label, server, database, keys, answered: 0, seconds: 0, serverMs: 0, databaseUs: 0 })
          const sides = [
            side("engine", engine, engineDb, await makeAccounts(engine.url, 8)),
            side("framework + INSERT", floor, floorDb, ["none"]),
            side("bare", bare, bareDb, ["none"])
          ]
          for (const s of sides) {
            await probeSubmit(s.server.url, s.keys[0]!, MODEL)
            await submitLoad({ url: s.server.url, keys: s.keys, model: MODEL, connections, seconds: Math.max(3, settings.httpWarmupSeconds), label: `${s.label} warm-up`, warmup: true })
          }
          for (let round = 0; round < count; round++) {
            for (let k = 0; k < sides.length; k++) {
              const s = sides[(round + k) % sides.length]!
              log(`http_store_floor: round ${round + 1} of ${count}, ${s.label}`)
              const database = await ownDatabaseCpu(s.database)
              const before = processCpuMs(s.server.pid)
              const result = await submitLoad({ url: s.server.url, keys: s.keys, model: MODEL, connections, seconds: settings.httpSeconds, label: s.label })
              s.serverMs += processCpuMs(s.server.pid) - before
              s.databaseUs += (await database(result.ok)) * result.ok
              s.answered += result.ok
              s.seconds += settings.httpSeconds
            }
          }
          const [engineSide, floorSide, bareSide] = sides as [Side, Side, Side]
          report(`http_store_floor_engine_${connections}_clients`, engineSide, bareSide, "the bundled server's submit (API only, 8 accounts)", connections, count)
          report(
            `http_store_floor_framework_${connections}_clients`,
            floorSide,
            bareSide,
            "the engine's HttpApi shape and PostgreSQL client, one INSERT, nothing else (bareServers/httpApiPg.ts)",
            connections,
            count
          )
        } finally {
          for (const server of started) await server.stop()
        }
      })))
}
