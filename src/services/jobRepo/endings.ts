import { Effect, Option, Result, type Scope } from "effect"
import { UnauthorizedAccess } from "../../domain/accessRefusals.js"
import type { JobId } from "../../domain/ids.js"
import { type Job, JobCannotBeCancelled, JobNotFound, type OutputItem, transition } from "../../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../../domain/providerHandle.js"
import { deliveryFor } from "../../domain/webhook.js"
import type { JobDrivers } from "../../ports/JobLeaseDriver.js"
import type { JobRepo } from "../../ports/JobRepo.js"
import type { JobStoreDriver } from "../../ports/JobStoreDriver.js"
import { makeWriteBatcher } from "../writeBatcher.js"
import { holdsLease, move, releasedLease } from "./move.js"

/** Cancels a pending job of the account, refunded; any other status is refused with the reason. */
export const cancel = (driver: JobStoreDriver): JobRepo["Service"]["cancel"] => (id, accountId, now) =>
  driver.transaction(Effect.gen(function*() {
    const found = yield* driver.lockJob(id)
    if (Option.isNone(found)) return yield* Effect.fail(new JobNotFound({ message: `No job "${id}"`, details: { jobId: id } }))
    const job = found.value
    if (job.accountId !== accountId) {
      return yield* Effect.fail(new UnauthorizedAccess({ message: "This API key has no access to the job", details: { jobId: id } }))
    }
    const moved = yield* move(driver, job, "Cancel", { completedAt: now }, now)
    if (Option.isNone(moved)) {
      return yield* Effect.fail(
        new JobCannotBeCancelled({ message: `Only pending jobs can be cancelled; this one is ${job.status}`, details: {
          jobId: id,
          status: job.status
        } })
      )
    }
    return { job: moved.value, refundedMicroCents: job.costMicroCents }
  }))

export const fail = (driver: JobStoreDriver): JobRepo["Service"]["fail"] => (id, workerId, error, now, providerRoute) =>
  driver.transaction(Effect.gen(function*() {
    const job = yield* driver.lockJob(id)
    if (Option.isNone(job)) return Option.none<Job>()
    // A worker fails only the job it holds; without a worker the job is abandoned, whoever holds it.
    if (workerId !== null && !holdsLease(job.value, workerId)) return Option.none<Job>()
    const changes = { error, completedAt: now, ...releasedLease, ...(providerRoute === undefined ? {} : { providerRoute }) }
    return yield* move(driver, job.value, workerId === null ? "Abandon" : "Fail", changes, now)
  }))

/**
 * Completions of many jobs in one transaction: one conditional write ends those still held by
 * their workers and writes their changes feed entries with them (JobLeaseDriver.finishHeld), and
 * their webhook deliveries are written beside them.
 */
export const makeComplete = ({ leases, store }: JobDrivers): Effect.Effect<JobRepo["Service"]["complete"], never, Scope.Scope> =>
  Effect.map(
    makeWriteBatcher(
      (endings: ReadonlyArray<{
        readonly id: JobId
        readonly workerId: string
        readonly outputs: ReadonlyArray<OutputItem>
        readonly now: number
        readonly providerRoute: ProviderRouteRef | undefined
      }>) =>
        store.transaction(Effect.gen(function*() {
          const status = Result.getOrThrow(transition("processing", "Complete"))
          const written = yield* leases.finishHeld(endings.map((e) => ({
            id: e.id,
            leaseOwner: e.workerId,
            status,
            outputs: e.outputs,
            error: null,
            completedAt: e.now,
            ...(e.providerRoute === undefined ? {} : { providerRoute: e.providerRoute })
          })))
          const byId = new Map(written.map((job) => [job.id, job]))
          const deliveries = endings.flatMap((e) => {
            const job = byId.get(e.id)
            const delivery = job === undefined ? undefined : deliveryFor(job, e.now)
            return delivery === undefined ? [] : [delivery]
          })
          if (deliveries.length > 0) yield* store.insertDeliveries(deliveries)
          return endings.map((e) => Option.fromNullishOr(byId.get(e.id)))
        }))
    ),
    (complete) => (id, workerId, outputs, now, providerRoute) => complete({ id, workerId, outputs, now, providerRoute })
  )

/** Provider states of many running jobs in one conditional write; no transaction needed around one statement. */
export const makeSaveProviderState = ({ leases }: JobDrivers): Effect.Effect<JobRepo["Service"]["saveProviderState"], never, Scope.Scope> =>
  Effect.map(
    makeWriteBatcher(
      (states: ReadonlyArray<{ readonly id: JobId; readonly leaseOwner: string; readonly state: ProviderState }>) =>
        Effect.map(leases.updateProviderStates(states), (written) => {
          const held = new Set(written)
          return states.map((s) => held.has(s.id))
        })
    ),
    (save) => (id, workerId, state) => save({ id, leaseOwner: workerId, state })
  )
