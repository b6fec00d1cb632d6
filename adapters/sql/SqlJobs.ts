import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { QueueIsBroker } from "../../src/ports/JobQueue.js"
import type { JobDrivers, JobLeaseDriver } from "../../src/ports/JobLeaseDriver.js"
import type { JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { readActiveJobs } from "./activeJobs.js"
import { makeAdmissionStatements } from "./jobs/admission.js"
import { makeChargeStatements } from "./jobs/charge.js"
import { makeDeliveryInserts } from "./jobs/deliveries.js"
import { makeJobRowStatements } from "./jobs/jobRows.js"
import { makeSubmitStatements } from "./jobs/submit.js"
import { postLedger } from "./ledger.js"
import { makeClaimStatements } from "./queue/claims.js"
import { type JobSql, makeLeaseClock } from "./queue/context.js"
import { makeHandBackStatements } from "./queue/handBack.js"
import { makeUnstartedStatements } from "./queue/unstarted.js"
import { makeHeldStatements } from "./queue/held.js"
import { makeProviderLimitStatements } from "./queue/providerLimits.js"
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
  // PostgreSQL's batched submits wake the store's claimers in their own statement; with a broker
  // no claimer listens (its deliveries wake the workers).
  const broker = yield* QueueIsBroker
  const wakesClaimers = sql.onDialectOrElse({ pg: () => !broker, orElse: () => false })

  const { chargeAccount, lockAccount } = makeChargeStatements(ctx)
  const store: JobStoreDriver = {
    transaction: (effect) => sql.withTransaction(effect).pipe(storeErrors("transaction")),
    lockAccount,
    chargeAccount,
    ...makeAdmissionStatements(ctx),
    // Read under the account's lock: no submit or fold moves the count meanwhile.
    activeJobs: (accountId) => readActiveJobs(sql, t, accountId),
    ...makeSubmitStatements(ctx, wakesClaimers),
    ...makeJobRowStatements(ctx),
    postLedger: (entry) => postLedger(sql, t, entry).pipe(storeErrors("post ledger entry")),
    insertDeliveries: makeDeliveryInserts(ctx)
  }
  const leases: JobLeaseDriver = {
    ...makeClaimStatements(ctx),
    ...makeHeldStatements(ctx),
    ...makeHandBackStatements(ctx),
    ...makeUnstartedStatements(ctx),
    ...makeReaperStatements(ctx),
    ...makeProviderLimitStatements(ctx)
  }
  return { store, leases } satisfies JobDrivers
})
