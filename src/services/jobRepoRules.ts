import { Effect, Either, Option } from "effect"
import { idempotencyConflict, refuseSubmit } from "../domain/admission.js"
import { engineError, StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import { activeStatuses, type Job, type JobEvent, refundsOnEntry, transition } from "../domain/job.js"
import { DAY_MS, MINUTE_MS } from "../domain/rateLimit.js"
import { deliveryFor } from "../domain/webhook.js"
import type { JobRepo, SubmitOutcome } from "../ports/JobRepo.js"
import type { JobStoreDriver } from "../ports/JobStoreDriver.js"

const abandonedLease = {
  code: "INTERNAL_ERROR",
  message: "The job's workers stopped responding; its cost was refunded"
} as const

const holdsLease = (job: Job, workerId: string) => job.status === "processing" && job.leaseOwner === workerId

const releasedLease = { leaseOwner: null, leaseExpiresAt: null } as const

/** The job repository over any store driver: every job rule lives here, once for all stores. */
export const makeJobRepo = (driver: JobStoreDriver): JobRepo["Type"] => {
  /**
   * Applies an event through the state machine and settles what the new status implies: the
   * refund and the webhook outbox row. None when the machine refuses the event, or when the
   * conditional write finds the job changed since it was read (a race lost): then nothing else
   * is written, so a transition is never settled twice.
   */
  const move = (job: Job, event: JobEvent, changes: Partial<Job>, now: number) =>
    Either.match(transition(job.status, event), {
      onLeft: () => Effect.succeed(Option.none<Job>()),
      onRight: (status) =>
        Effect.gen(function*() {
          const next: Job = { ...job, ...changes, status }
          if (!(yield* driver.updateJob(next, { status: job.status, attempts: job.attempts }))) return Option.none<Job>()
          if (refundsOnEntry(status) && job.costMicroCents > 0) {
            yield* driver.postLedger({
              accountId: job.accountId,
              jobId: job.id,
              kind: "refund",
              amountMicroCents: job.costMicroCents,
              now
            })
          }
          const delivery = deliveryFor(next, now)
          if (delivery !== undefined) yield* driver.insertDelivery(delivery)
          return Option.some(next)
        })
    })

  const replay = (jobId: JobId) =>
    Effect.flatMap(driver.getJob(jobId), (found) =>
      Option.match(found, {
        onNone: () => Effect.fail(new StoreError({ message: `Idempotency record points at missing job ${jobId}` })),
        onSome: (job) => Effect.succeed<SubmitOutcome>({ _tag: "Replayed", job })
      }))

  return {
    submit: ({ idempotency, job, maxConcurrentJobs, rateLimits }) =>
      driver.transaction(Effect.gen(function*() {
        // Locking the account first serialises an account's submits, across processes too.
        const account = yield* driver.lockAccount(job.accountId)
        if (Option.isNone(account)) return yield* Effect.fail(engineError("INVALID_API_KEY", "The account no longer exists"))
        if (idempotency !== undefined) {
          const previous = yield* driver.findIdempotency(job.accountId, idempotency.key)
          if (Option.isSome(previous) && previous.value.createdAt >= idempotency.notBefore) {
            if (previous.value.requestHash !== idempotency.requestHash) return yield* Effect.fail(idempotencyConflict(idempotency.key))
            return yield* replay(previous.value.jobId)
          }
        }
        const usage = (since: number) => driver.windowUsage(job.accountId, job.model, job.version, since)
        const refusal = refuseSubmit({
          now: job.createdAt,
          costMicroCents: job.costMicroCents,
          balanceMicroCents: account.value.balanceMicroCents,
          activeJobs: yield* driver.countJobs(job.accountId, activeStatuses),
          maxConcurrentJobs,
          rateLimits,
          minute: yield* usage(job.createdAt - MINUTE_MS),
          day: yield* usage(job.createdAt - DAY_MS)
        })
        if (refusal !== undefined) return yield* Effect.fail(refusal)
        yield* driver.insertJob(job)
        if (job.costMicroCents > 0) {
          yield* driver.postLedger({
            accountId: job.accountId,
            jobId: job.id,
            kind: "charge",
            amountMicroCents: -job.costMicroCents,
            now: job.createdAt
          })
        }
        if (idempotency !== undefined) {
          yield* driver.saveIdempotency(job.accountId, idempotency.key, {
            requestHash: idempotency.requestHash,
            jobId: job.id,
            createdAt: job.createdAt
          })
        }
        return { _tag: "Created", job } satisfies SubmitOutcome
      })),

    get: driver.getJob,

    list: driver.listJobs,

    cancel: (id, accountId, now) =>
      driver.transaction(Effect.gen(function*() {
        const found = yield* driver.lockJob(id)
        if (Option.isNone(found)) return yield* Effect.fail(engineError("JOB_NOT_FOUND", `No job "${id}"`, { jobId: id }))
        const job = found.value
        if (job.accountId !== accountId) {
          return yield* Effect.fail(engineError("UNAUTHORIZED_ACCESS", "This API key has no access to the job", { jobId: id }))
        }
        const moved = yield* move(job, "Cancel", { completedAt: now }, now)
        if (Option.isNone(moved)) {
          return yield* Effect.fail(
            engineError("JOB_CANNOT_BE_CANCELLED", `Only pending jobs can be cancelled; this one is ${job.status}`, {
              jobId: id,
              status: job.status
            })
          )
        }
        return { job: moved.value, refundedMicroCents: job.costMicroCents }
      })),

    claim: ({ leaseMs, maxAttempts, now, workerId }) =>
      driver.transaction(Effect.gen(function*() {
        for (const job of yield* driver.findExhausted(now, maxAttempts)) {
          yield* move(job, "Abandon", { error: abandonedLease, completedAt: now, ...releasedLease }, now)
        }
        const next = yield* driver.nextRunnable(now)
        if (Option.isNone(next)) return Option.none<Job>()
        const job = next.value
        return yield* move(job, job.status === "pending" ? "Pickup" : "Reclaim", {
          attempts: job.attempts + 1,
          startedAt: job.startedAt ?? now,
          leaseOwner: workerId,
          leaseExpiresAt: now + leaseMs
        }, now)
      })),

    renewLease: (id, workerId, leaseExpiresAt) =>
      driver.transaction(Effect.gen(function*() {
        const job = yield* driver.lockJob(id)
        if (Option.isNone(job) || !holdsLease(job.value, workerId)) return false
        return yield* driver.updateJob({ ...job.value, leaseExpiresAt }, job.value)
      })),

    complete: (id, workerId, outputs, now) =>
      driver.transaction(Effect.gen(function*() {
        const job = yield* driver.lockJob(id)
        if (Option.isNone(job) || !holdsLease(job.value, workerId)) return Option.none<Job>()
        return yield* move(job.value, "Complete", { outputs, completedAt: now, ...releasedLease }, now)
      })),

    fail: (id, workerId, error, now) =>
      driver.transaction(Effect.gen(function*() {
        const job = yield* driver.lockJob(id)
        if (Option.isNone(job)) return Option.none<Job>()
        // A worker fails only the job it holds; without a worker the job is abandoned, whoever holds it.
        if (workerId !== null && !holdsLease(job.value, workerId)) return Option.none<Job>()
        const changes = { error, completedAt: now, ...releasedLease }
        return yield* move(job.value, workerId === null ? "Abandon" : "Fail", changes, now)
      }))
  }
}
