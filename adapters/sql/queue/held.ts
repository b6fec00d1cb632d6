import { Effect, Schema, Struct } from "effect"
import type { JobId } from "../../../src/domain/ids.js"
import type { ProviderRouteRef, ProviderState } from "../../../src/domain/providerHandle.js"
import type { ClaimBesideEnding, HeldEnding, JobLeaseDriver } from "../../../src/ports/JobLeaseDriver.js"
import type { HeldLease } from "../../../src/ports/JobRepo.js"
import { changeInsertFrom } from "../jobs/changes.js"
import { allJobs } from "../jobs/jobRows.js"
import { decodeRows, isJobStatus, JobFields, jobColumnNames, plainOutputs, plainRoute, storeErrors } from "../rows.js"
import { makeClaimFragments } from "./claims.js"
import type { JobSql } from "./context.js"
import { byId, DEADLOCK_RETRIES, heldInPg, isDeadlock } from "./lockOrder.js"
import { statusFilter } from "./statusFilter.js"

const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))
const idsOf = (rows: ReadonlyArray<unknown>) => decodeIds(rows).pipe(Effect.map((found) => found.map((row) => row.id as JobId)))

/** Some of a job's fields as their columns. */
const jobColumns = <const Names extends ReadonlyArray<keyof typeof JobFields.fields>>(names: Names) =>
  JobFields.mapFields(Struct.pick(names)).pipe(Schema.encodeKeys(jobColumnNames))

/** A provider state as the job's columns hold it. */
const encodeProviderColumns = Schema.encodeSync(jobColumns(["providerPhase", "providerHandle", "providerStarts"]))
const providerColumns = (state: ProviderState) =>
  encodeProviderColumns({ providerPhase: state.phase, providerHandle: state.handle, providerStarts: state.starts })

const encodeEnding = Schema.encodeSync(jobColumns(["status", "outputs", "error", "completedAt"]))

/**
 * What ending a held job writes, as the job's columns hold it (the lease given up beside it).
 * An ending without an error, its outputs plain (plainOutputs), is written by hand: the Schema's
 * encode was ~6 % of a draining worker's busy time (docs/benchmarks.md, "PostgreSQL drain: the
 * worker's CPU per job"). Any other through the Schema; a test holds the two equal.
 */
export const endingColumns = (ending: HeldEnding) => {
  const outputs = ending.outputs === null ? null : plainOutputs(ending.outputs)
  return ending.error === null && outputs !== undefined && isJobStatus(ending.status) && Number.isSafeInteger(ending.completedAt)
    ? { status: ending.status, error: null, outputs: outputs === null ? null : JSON.stringify(outputs), completed_at: ending.completedAt }
    : encodeEnding(ending)
}

const encodeRoute = Schema.encodeSync(jobColumns(["providerRoute"]))

/** A route to record, as its column holds it; null keeps the stored one (a route once recorded never changes). */
export const routeOrNull = (route: ProviderRouteRef | undefined) => {
  if (route === undefined) return null
  const plain = plainRoute(route)
  return plain === undefined ? encodeRoute({ providerRoute: route }).provider_route : JSON.stringify(plain)
}

type ProviderStates = ReadonlyArray<{ readonly id: JobId; readonly leaseOwner: string; readonly state: ProviderState }>

/**
 * The writes a worker makes while it holds jobs, each only where the job is still processing
 * under that worker's lease. PostgreSQL writes many jobs in one statement over a JSON record
 * set; SQLite's writes are local calls, one statement per job.
 */
export const makeHeldStatements = (ctx: JobSql) => {
  const { clock, sql, t } = ctx
  const { claimPg } = makeClaimFragments(ctx)

  /** SQLite's status test on the rows found by id (statusFilter.ts). */
  const jobStatus = statusFilter(sql)
  /**
   * PostgreSQL: the renewal locks its rows in the order of its list (its plan probes the jobs by
   * each entry in turn), as the provider reports' and the endings' statements do theirs. Two of
   * them that take two rows in opposite orders deadlock, and PostgreSQL aborts one of them: at
   * 10,000 in flight one renewal in each run did. The list goes by id, the order the reports
   * take too, and a renewal aborted by a deadlock is tried again at once (a savepoint, as the
   * renewal runs in a transaction the abort would leave unusable): its leases are not at fault.
   */
  const renewLeases = sql.onDialectOrElse({
    pg: () => (leases: ReadonlyArray<HeldLease>, now: number, leaseExpiresAt: number) =>
      sql.withTransaction(
        sql`WITH held AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(leases))}::jsonb) AS held(id text, "workerId" text))
        UPDATE ${t.jobs} AS j SET lease_expires_at = ${clock.until(now, leaseExpiresAt)}
        FROM held WHERE ${heldInPg(sql, "held")} AND j.lease_owner = held."workerId" RETURNING j.id`
      ).pipe(Effect.retry({ while: isDeadlock, times: DEADLOCK_RETRIES })),
    // SQLite: the status a filter on the rows found by id (`statusFilter`). Written plainly, the
    // planner reads every processing job from the status index and probes the list with each:
    // a renewal of 500 leases then costs what one of all the process's leases does.
    orElse: () => (leases: ReadonlyArray<HeldLease>, _now: number, leaseExpiresAt: number) =>
      sql`UPDATE ${t.jobs} SET lease_expires_at = ${leaseExpiresAt}
        WHERE ${jobStatus} = 'processing' AND (id, lease_owner) IN (
          SELECT json_extract(value, '$.id'), json_extract(value, '$.workerId') FROM json_each(${JSON.stringify(leases)})
        ) RETURNING id`
  })

  const updateProviderStates = sql.onDialectOrElse({
    pg: () => (states: ProviderStates) =>
      sql`WITH d AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(states).map(({ id, leaseOwner, state }) => ({
        id,
        leaseOwner,
        ...providerColumns(state),
        route: routeOrNull(state.route)
      })))}::jsonb) AS d(id text, "leaseOwner" text, provider_phase text, provider_handle text, provider_starts bigint, route text))
        UPDATE ${t.jobs} AS j SET provider_phase = d.provider_phase, provider_handle = d.provider_handle,
          provider_starts = d.provider_starts, provider_route = COALESCE(d.route, j.provider_route)
        FROM d WHERE ${heldInPg(sql, "d")} AND j.lease_owner = d."leaseOwner" RETURNING j.id`,
    // Called on its own: one transaction around the per-job statements.
    orElse: () => (states: ProviderStates) =>
      sql.withTransaction(Effect.map(
        Effect.forEach(states, ({ id, leaseOwner, state }) =>
          sql`UPDATE ${t.jobs} SET ${sql.update(providerColumns(state))},
              provider_route = COALESCE(${routeOrNull(state.route)}, provider_route)
            WHERE id = ${id} AND status = 'processing' AND lease_owner = ${leaseOwner} RETURNING id`),
        (rows) => rows.flat()
      ))
  })

  // The changes feed's entries are written with the endings: PostgreSQL in the UPDATE's own
  // statement (no round trip more in the completion batch), SQLite in one INSERT after it.
  /**
   * The PostgreSQL ending's CTEs (`d`, the endings; `ended`, the jobs written; `entries`);
   * `onlyWithoutWebhook` leaves the jobs that have a webhook URL as they are; `d.frees` marks the
   * jobs of `freeing` (finishHeldAndClaim). The endings go by id, as renewals, reports and
   * provider states do: the UPDATE locks its rows in its list's order (lockOrder.ts).
   */
  const endingCtesPg = (endings: ReadonlyArray<HeldEnding>, onlyWithoutWebhook: boolean, freeing: ReadonlySet<JobId> = new Set()) =>
    sql`d AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(endings).map((e) => ({
      id: e.id,
      leaseOwner: e.leaseOwner,
      ...endingColumns(e),
      route: routeOrNull(e.providerRoute),
      ...(freeing.has(e.id) ? { frees: true } : {})
    })))}::jsonb) AS d(id text, "leaseOwner" text, status text, outputs text, error text, completed_at bigint, route text, frees boolean)),
      ended AS (UPDATE ${t.jobs} AS j SET status = d.status, outputs = d.outputs, error = d.error,
          completed_at = d.completed_at, lease_owner = NULL, lease_expires_at = NULL,
          provider_route = COALESCE(d.route, j.provider_route)
        FROM d WHERE ${heldInPg(sql, "d")} AND j.lease_owner = d."leaseOwner"${onlyWithoutWebhook ? sql` AND j.webhook_url IS NULL` : sql``}
        RETURNING j.*),
      entries AS (${changeInsertFrom(ctx, sql("ended"), sql`TRUE`, undefined)})`
  const finishHeldPg = (endings: ReadonlyArray<HeldEnding>, onlyWithoutWebhook: boolean) =>
    sql`WITH ${endingCtesPg(endings, onlyWithoutWebhook)} SELECT * FROM ended`

  /**
   * PostgreSQL: the ending of the jobs without a webhook URL and the next claim, one statement.
   * The claim's limit is read from the jobs the statement ended (`room`), so a fiber whose job's
   * ending was refused (its lease lost, or a webhook to commit with it) is not claimed for here.
   * Rows come back marked `ended_row`: the ended ones, then the claimed ones.
   */
  const finishHeldAndClaimPg = (endings: ReadonlyArray<HeldEnding>, claim: ClaimBesideEnding) => {
    const { ctes, update } = claimPg(claim, sql`(SELECT n FROM room)`, "d")
    return sql`WITH ${endingCtesPg(endings, true, new Set(claim.freeing))},
        room AS (SELECT GREATEST(0, ${claim.limit}::int + count(*)::int) AS n FROM ended WHERE id IN (SELECT id FROM d WHERE frees)),
        ${ctes}, claimed AS (${update})
      SELECT true AS ended_row, * FROM ended UNION ALL SELECT false, * FROM claimed`
  }

  const finishHeld = sql.onDialectOrElse({
    pg: () => (endings: ReadonlyArray<HeldEnding>) => finishHeldPg(endings, false),
    orElse: () => (endings: ReadonlyArray<HeldEnding>) =>
      Effect.gen(function*() {
        const rows = (yield* Effect.forEach(endings, (e) =>
          sql`UPDATE ${t.jobs} SET ${sql.update(endingColumns(e))}, lease_owner = NULL, lease_expires_at = NULL,
              provider_route = COALESCE(${routeOrNull(e.providerRoute)}, provider_route)
            WHERE id = ${e.id} AND status = 'processing' AND lease_owner = ${e.leaseOwner} RETURNING *`)).flat()
        const ids = (yield* idsOf(rows)) as ReadonlyArray<string>
        if (ids.length > 0) {
          yield* changeInsertFrom(ctx, t.jobs, sql`e.id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`, undefined)
        }
        return rows
      })
  })

  return {
    renewLeases: ((leases, now, leaseExpiresAt) =>
      renewLeases(leases, now, leaseExpiresAt).pipe(Effect.flatMap(idsOf), storeErrors("renew leases"))) satisfies JobLeaseDriver[
        "renewLeases"
      ],
    updateProviderStates: ((states) =>
      updateProviderStates(states).pipe(Effect.flatMap(idsOf), storeErrors("update provider state"))) satisfies JobLeaseDriver[
        "updateProviderStates"
      ],
    finishHeld: ((endings) => finishHeld(endings).pipe(Effect.flatMap(allJobs), storeErrors("end held jobs"))) satisfies JobLeaseDriver[
      "finishHeld"
    ],
    // PostgreSQL only: there BEGIN and COMMIT are two round trips of the three a completion batch
    // costs; SQLite's ending is several local statements, which its transaction keeps together.
    ...sql.onDialectOrElse({
      pg: () => ({
        finishHeldWithoutWebhook: ((endings) =>
          finishHeldPg(endings, true).pipe(Effect.flatMap(allJobs), storeErrors("end held jobs"))) satisfies NonNullable<
            JobLeaseDriver["finishHeldWithoutWebhook"]
          >,
        finishHeldAndClaim: ((endings, claim) =>
          finishHeldAndClaimPg(endings, claim).pipe(
            Effect.flatMap((rows) => {
              const isEnded = (row: unknown) => (row as { readonly ended_row: boolean }).ended_row
              return Effect.zipWith(
                allJobs(rows.filter(isEnded)),
                allJobs(rows.filter((row) => !isEnded(row))),
                (ended, claimed) => ({ ended, claimed })
              )
            }),
            storeErrors("end held jobs and claim")
          )) satisfies NonNullable<JobLeaseDriver["finishHeldAndClaim"]>
      }),
      orElse: () => ({})
    })
  }
}
