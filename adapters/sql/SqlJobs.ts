import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { JobDrivers, JobLeaseDriver } from "../../src/ports/JobLeaseDriver.js"
import { QueueIsBroker } from "../../src/ports/JobQueue.js"
import type { JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { readActiveJobs } from "./activeJobs.js"
import { makeAdmissionStatements } from "./jobs/admission.js"
import { makeChargeStatements } from "./jobs/charge.js"
import { makeDeliveryInserts } from "./jobs/deliveries.js"
import { makeJobRowStatements } from "./jobs/jobRows.js"
import { jobsChannel, makeSubmitStatements } from "./jobs/submit.js"
import { postLedger } from "./ledger.js"
import { makeClaimStatements } from "./queue/claims.js"
import { type JobSql, makeLeaseClock } from "./queue/context.js"
import { makeHeldStatements } from "./queue/held.js"
import { makeProviderLimitStatements } from "./queue/providerLimits.js"
import { PgNotifyBehind } from "./pgNotifyBehind.js"
import { makeReaperStatements } from "./queue/reaper.js"
import { storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

export { jobsChannel } from "./jobs/submit.js"

export interface SqlJobDriverOptions {
  /**
   * PostgreSQL only: lease times (claims, renewals, expiry checks) from the database's clock
   * rather than the engine's, so processes whose clocks drift apart never take over a lease
   * early. Default true; false only for tests that drive time themselves.
   */
  readonly databaseClock?: boolean | undefined
}

type SubmitStatements = ReturnType<typeof makeSubmitStatements>

/**
 * PostgreSQL's submits with the jobs NOTIFY written behind their statement (PgNotifyBehind):
 * claimers in every process hear of a queued job as it commits, not a round trip after its
 * answer. A submit offering its job to a local worker carries none (a job handed off wakes no
 * one; one queued after all is notified after the answer, as before). The mark a carried NOTIFY
 * leaves on the fiber tells the job signal not to send another (PgJobSignal's wakeClaimers); a
 * submit that stored nothing or failed, and a job written in a transaction, clear it first.
 */
const carryingSubmits = Effect.fnUntraced(function*(ctx: JobSql, behind: PgNotifyBehind["Service"], plain: SubmitStatements) {
  const carrying = makeSubmitStatements({ ...ctx, sql: yield* behind.client(jobsChannel(ctx.t.prefix), "jobs") })
  const forget = Effect.sync(behind.forget)
  const marked = <A, E>(write: Effect.Effect<A, E>, stored: (answer: A) => boolean) =>
    Effect.andThen(forget, write).pipe(
      Effect.tap((answer) => (stored(answer) ? Effect.void : forget)),
      Effect.tapError(() => forget)
    )
  return {
    insertJob: (job, handOff) => Effect.andThen(forget, plain.insertJob(job, handOff)),
    submit: (job, maxConcurrentJobs, handOff) =>
      handOff === undefined
        ? marked(carrying.submit(job, maxConcurrentJobs, undefined), Option.isSome)
        : Effect.andThen(forget, plain.submit(job, maxConcurrentJobs, handOff)),
    submitGated: carrying.submitGated === undefined || plain.submitGated === undefined ? undefined : (
      job,
      maxConcurrentJobs,
      handOff,
      gates
    ) =>
      handOff === undefined
        ? marked(carrying.submitGated!(job, maxConcurrentJobs, undefined, gates), (answer) => answer._tag === "Created")
        : Effect.andThen(forget, plain.submitGated!(job, maxConcurrentJobs, handOff, gates))
  } satisfies SubmitStatements
})

/**
 * Jobs in SQLite or PostgreSQL, for makeJobRepo: the storage statements are in ./jobs, the
 * store's own queue in ./queue, one file per concern, each statement choosing its dialect once.
 * PostgreSQL adds row locks to transactions and claims with SKIP LOCKED; SQLite's single writer
 * already serialises them.
 */
export const makeSqlJobDriver = (options: SqlJobDriverOptions = {}) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const databaseClock = sql.onDialectOrElse({ pg: () => options.databaseClock ?? true, orElse: () => false })
  const ctx: JobSql = { sql, t, clock: makeLeaseClock(sql, databaseClock) }
  const plainSubmits = makeSubmitStatements(ctx)
  // With a broker, claimers wait on it, not on NOTIFY.
  const behind = (yield* QueueIsBroker) ? Option.none() : yield* Effect.serviceOption(PgNotifyBehind)
  const submits = Option.isSome(behind) ? yield* carryingSubmits(ctx, behind.value, plainSubmits) : plainSubmits

  const { chargeAccount, lockAccount } = makeChargeStatements(ctx)
  const store: JobStoreDriver = {
    transaction: (effect) => sql.withTransaction(effect).pipe(storeErrors("transaction")),
    lockAccount,
    chargeAccount,
    ...makeAdmissionStatements(ctx),
    // Read under the account's lock: no submit or fold moves the count meanwhile.
    activeJobs: (accountId) => readActiveJobs(sql, t, accountId),
    ...submits,
    ...makeJobRowStatements(ctx),
    postLedger: (entry) => postLedger(sql, t, entry).pipe(storeErrors("post ledger entry")),
    insertDeliveries: makeDeliveryInserts(ctx)
  }
  const leases: JobLeaseDriver = {
    ...makeClaimStatements(ctx),
    ...makeHeldStatements(ctx),
    ...makeReaperStatements(ctx),
    ...makeProviderLimitStatements(ctx)
  }
  return { store, leases } satisfies JobDrivers
})
