import { Effect, Exit, Option, Result, type Scope } from "effect"
import { UnauthorizedAccess } from "../../domain/accessRefusals.js"
import type { StoreError } from "../../domain/errors.js"
import type { JobId } from "../../domain/ids.js"
import { type Job, JobCannotBeCancelled, JobNotFound, type OutputItem, transition } from "../../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../../domain/providerHandle.js"
import { deliveryFor } from "../../domain/webhook.js"
import type { HeldEnding, JobDrivers } from "../../ports/JobLeaseDriver.js"
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

type Completion = {
  readonly id: JobId
  readonly workerId: string
  readonly outputs: ReadonlyArray<OutputItem>
  readonly now: number
  readonly providerRoute: ProviderRouteRef | undefined
}

/** One transaction: the endings and the webhook deliveries of the jobs it ended. */
const completeInTransaction = ({ leases, store }: JobDrivers, completions: ReadonlyArray<Completion>, endings: ReadonlyArray<HeldEnding>) =>
  store.transaction(Effect.gen(function*() {
    const written = yield* leases.finishHeld(endings)
    const byId = new Map(written.map((job) => [job.id, job]))
    const deliveries = completions.flatMap((e) => {
      const job = byId.get(e.id)
      const delivery = job === undefined ? undefined : deliveryFor(job, e.now)
      return delivery === undefined ? [] : [delivery]
    })
    if (deliveries.length > 0) yield* store.insertDeliveries(deliveries)
    return written
  }))

/**
 * Completions of many jobs at once: one conditional write ends those still held by their
 * workers and writes their changes feed entries with them (JobLeaseDriver.finishHeld), and their
 * webhook deliveries are written beside them in one transaction. A job without a webhook URL has
 * no delivery to commit with its ending: where the store ends those in a write of their own
 * (`finishHeldWithoutWebhook`), they are, and only the others take the transaction.
 *
 * Each completion answers for itself: once that first write committed, a failure of the
 * transaction fails only the completions it held (each then written again alone, as the write
 * batcher does), never one already ended, whose worker would take it for a lost lease.
 */
export const makeComplete = (drivers: JobDrivers): Effect.Effect<JobRepo["Service"]["complete"], never, Scope.Scope> =>
  Effect.map(
    makeWriteBatcher((completions: ReadonlyArray<Completion>) =>
      Effect.gen(function*() {
        const status = Result.getOrThrow(transition("processing", "Complete"))
        const endingOf = (e: Completion): HeldEnding => ({
          id: e.id,
          leaseOwner: e.workerId,
          status,
          outputs: e.outputs,
          error: null,
          completedAt: e.now,
          ...(e.providerRoute === undefined ? {} : { providerRoute: e.providerRoute })
        })
        const withoutWebhook = drivers.leases.finishHeldWithoutWebhook
        const ended = new Map(withoutWebhook === undefined ? [] : (yield* withoutWebhook(completions.map(endingOf))).map((job) => [job.id, job]))
        const rest = completions.filter((e) => !ended.has(e.id))
        const answers = new Map<JobId, Exit.Exit<Option.Option<Job>, StoreError>>()
        const settle = (batch: ReadonlyArray<Completion>) =>
          Effect.map(Effect.exit(completeInTransaction(drivers, batch, batch.map(endingOf))), (exit) => {
            if (Exit.isSuccess(exit)) {
              const byId = new Map(exit.value.map((job) => [job.id, job]))
              for (const e of batch) answers.set(e.id, Exit.succeed(Option.fromNullishOr(byId.get(e.id))))
            } else for (const e of batch) answers.set(e.id, Exit.failCause(exit.cause))
            return Exit.isSuccess(exit)
          })
        if (rest.length > 0 && !(yield* settle(rest)) && rest.length > 1) {
          for (const e of rest) yield* settle([e])
        }
        return completions.map((e) => answers.get(e.id) ?? Exit.succeed(Option.fromNullishOr(ended.get(e.id))))
      })
    ),
    (complete) => (id, workerId, outputs, now, providerRoute) => Effect.flatten(complete({ id, workerId, outputs, now, providerRoute }))
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
