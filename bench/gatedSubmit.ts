/**
 * gated_submit: submits with an Idempotency-Key, rate limits and a budget through the engine's
 * JobRepo on PostgreSQL, in one process: through the gate (one statement, migration 0016) and,
 * as the reference, through the transaction every such submit took before (the same driver
 * without `submitGated`), alternately at each client count of BENCH_HTTP_CONNECTIONS, for
 * BENCH_HTTP_SECONDS each. Submits/s, and CPU per submit of this process and of the backends of
 * the bench's own database. No HTTP: only what the store path costs.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, ManagedRuntime, Redacted, Scope } from "effect"
import { layerPostgres } from "../adapters/sql/postgres.js"
import { makeSqlJobDriver } from "../adapters/sql/SqlJobs.js"
import { layerSqlTables } from "../adapters/sql/tables.js"
import type { ApiKeyId } from "../src/domain/ids.js"
import type { JobRepo, SubmitCommand } from "../src/ports/JobRepo.js"
import { makeJobRepo } from "../src/services/jobRepoRules.js"
import { createAccount, job } from "../test/conformance/fixtures.js"
import { settings } from "./lib/env.js"
import { ownDatabaseCpu, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"

const ACCOUNTS = 8
const WARMUP_SECONDS = 2
const LIMITS = { requestsPerMinute: 1_000_000, requestsPerDay: 1_000_000 }
const BUDGETS: SubmitCommand["budgets"] = [{ scope: "account", budget: { limitMicroCents: 1_000_000_000_000, period: "month" } }]

interface Measured {
  readonly rps: number
  readonly processCpuUs: number
  readonly databaseCpuUs: number
}

export const gatedSubmit = () =>
  withDatabase("gated", async (url, name) => {
    const stores = ManagedRuntime.make(layerPostgres({ url: Redacted.make(url), databaseClock: false }))
    const scope = Effect.runSync(Scope.make())
    try {
      const owners = await stores.runPromise(Effect.all(Array.from({ length: ACCOUNTS }, () =>
        createAccount(1_000_000_000_000, { maxConcurrentJobs: 1_000_000_000 }))))
      /** A repository on a pool of its own, through the gate or, without `submitGated`, the transaction. */
      const repoOf = (gated: boolean) =>
        Effect.gen(function*() {
          const pool = yield* Layer.buildWithScope(layerSqlTables().pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url) }))), scope)
          const drivers = yield* makeSqlJobDriver({ databaseClock: false }).pipe(Effect.provide(pool))
          return yield* makeJobRepo(gated ? drivers : { ...drivers, store: { ...drivers.store, submitGated: undefined } })
        }).pipe(Scope.provide(scope))
      const gated = await Effect.runPromise(repoOf(true))
      const transaction = await Effect.runPromise(repoOf(false))
      let sequence = 0
      const submitOne = (repo: JobRepo["Service"], client: number) => {
        const owner = owners[client % ACCOUNTS]!
        const keyed = job(owner.id, { apiKeyId: "key_bench" as ApiKeyId, createdAt: Date.now() })
        return Effect.runPromise(repo.submit({
          job: keyed,
          maxConcurrentJobs: 1_000_000_000,
          rateLimits: LIMITS,
          budgets: BUDGETS,
          idempotency: { key: `bench-${++sequence}`, requestHash: "h", notBefore: 0 }
        }))
      }
      /** `clients` loops, each a submit after the other, for `seconds`. */
      const run = async (repo: JobRepo["Service"], clients: number, seconds: number) => {
        let done = 0
        const deadline = performance.now() + seconds * 1000
        await Promise.all(Array.from({ length: clients }, async (_, client) => {
          while (performance.now() < deadline) {
            const outcome = await submitOne(repo, client)
            if (outcome._tag !== "Created") throw new Error(`a bench submit was ${outcome._tag}`)
            done++
          }
        }))
        return done
      }
      const measure = async (repo: JobRepo["Service"], clients: number): Promise<Measured> => {
        await run(repo, clients, WARMUP_SECONDS)
        const database = await ownDatabaseCpu(name)
        const cpu = process.cpuUsage()
        const started = performance.now()
        const done = await run(repo, clients, settings.httpSeconds)
        const elapsed = (performance.now() - started) / 1000
        const used = process.cpuUsage(cpu)
        return {
          rps: done / elapsed,
          processCpuUs: Math.round((used.user + used.system) / Math.max(1, done)),
          databaseCpuUs: await database(done)
        }
      }
      for (const clients of settings.httpClientCounts) {
        log(`gated_submit: ${clients} clients, the transaction then the gate`)
        const before = await measure(transaction, clients)
        const after = await measure(gated, clients)
        emit({
          figure: `gated_submit_${clients}_clients`,
          engine: after.rps,
          reference: before.rps,
          unit: "submits/s",
          better: "higher",
          referenceIs: "the same submits through the transaction (the driver without submitGated)",
          params: {
            clients,
            seconds: settings.httpSeconds,
            carries: "Idempotency-Key, minute and day rate limits, an account budget",
            gateCpuUsPerSubmit: { process: after.processCpuUs, ownDatabase: after.databaseCpuUs },
            transactionCpuUsPerSubmit: { process: before.processCpuUs, ownDatabase: before.databaseCpuUs }
          }
        })
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await stores.dispose()
    }
  })
