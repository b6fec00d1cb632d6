import { Effect, Either, Option } from "effect"
import { idempotencyConflict, refuseSubmit } from "../../src/domain/admission.js"
import { isAfterCursor } from "../../src/domain/cursor.js"
import { engineError, type EngineError } from "../../src/domain/errors.js"
import { type Job, type JobEvent, refundsOnEntry, transition } from "../../src/domain/job.js"
import { deliveryFor } from "../../src/domain/webhook.js"
import { DAY_MS, MINUTE_MS, type WindowUsage } from "../../src/domain/rateLimit.js"
import type { JobRepo, SubmitOutcome } from "../../src/ports/JobRepo.js"
import { post } from "./MemoryAccounts.js"
import type { MemoryState } from "./state.js"

const usage = (jobs: ReadonlyArray<Job>, since: number): WindowUsage => {
  const inside = jobs.filter((j) => j.createdAt > since)
  return { count: inside.length, oldest: inside.length === 0 ? null : Math.min(...inside.map((j) => j.createdAt)) }
}

const newestFirst = (a: Job, b: Job) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

export const jobRepo = (state: MemoryState): JobRepo["Type"] => {
  const atomically = state.lock.withPermits(1)

  /** Applies an event through the state machine; settles the refund and the webhook it implies. */
  const move = (job: Job, event: JobEvent, changes: Partial<Job>, now: number): Job => {
    const to = Either.getOrThrow(transition(job.status, event))
    const updated: Job = { ...job, ...changes, status: to }
    state.jobs.set(job.id, updated)
    const alreadyRefunded = state.ledger.some((e) => e.jobId === job.id && e.kind === "refund")
    if (refundsOnEntry(to) && job.costMicroCents > 0 && !alreadyRefunded) {
      post(state, job.accountId, "refund", job.costMicroCents, job.id, now)
    }
    const delivery = deliveryFor(updated, now)
    if (delivery !== undefined) state.deliveries.set(delivery.id, delivery)
    return updated
  }

  return {
    submit: ({ idempotency, job, maxConcurrentJobs, rateLimits }) =>
      atomically(Effect.suspend((): Effect.Effect<SubmitOutcome, EngineError> => {
        const idemKey = idempotency === undefined ? undefined : `${job.accountId}\u0000${idempotency.key}`
        const previous = idemKey === undefined ? undefined : state.idempotency.get(idemKey)
        if (idempotency !== undefined && previous !== undefined && previous.createdAt >= idempotency.notBefore) {
          if (previous.requestHash !== idempotency.requestHash) return Effect.fail(idempotencyConflict(idempotency.key))
          return Effect.succeed({ _tag: "Replayed" as const, job: state.jobs.get(previous.jobId)! })
        }
        const account = state.accounts.get(job.accountId)
        if (account === undefined) return Effect.fail(engineError("INVALID_API_KEY", "The account no longer exists"))
        const own = [...state.jobs.values()].filter((j) => j.accountId === job.accountId)
        const sameVersion = own.filter((j) => j.model === job.model && j.version === job.version)
        const refusal = refuseSubmit({
          now: job.createdAt,
          costMicroCents: job.costMicroCents,
          balanceMicroCents: account.balanceMicroCents,
          activeJobs: own.filter((j) => j.status === "pending" || j.status === "processing").length,
          maxConcurrentJobs,
          rateLimits,
          minute: usage(sameVersion, job.createdAt - MINUTE_MS),
          day: usage(sameVersion, job.createdAt - DAY_MS)
        })
        if (refusal !== undefined) return Effect.fail(refusal)
        state.jobs.set(job.id, job)
        if (job.costMicroCents > 0) post(state, job.accountId, "charge", -job.costMicroCents, job.id, job.createdAt)
        if (idemKey !== undefined && idempotency !== undefined) {
          state.idempotency.set(idemKey, { requestHash: idempotency.requestHash, jobId: job.id, createdAt: job.createdAt })
        }
        return Effect.succeed({ _tag: "Created" as const, job })
      })),

    get: (id) => Effect.sync(() => Option.fromNullable(state.jobs.get(id))),

    list: ({ accountId, after, limit, model, status }) =>
      Effect.sync(() =>
        [...state.jobs.values()]
          .filter((j) =>
            j.accountId === accountId &&
            (status === undefined || j.status === status) &&
            (model === undefined || j.model === model) &&
            (after === undefined || isAfterCursor({ createdAt: j.createdAt, id: j.id }, after))
          )
          .sort(newestFirst)
          .slice(0, limit + 1)
      ),

    cancel: (id, accountId, now) =>
      atomically(Effect.suspend(() => {
        const job = state.jobs.get(id)
        if (job === undefined) return Effect.fail(engineError("JOB_NOT_FOUND", `No job "${id}"`, { jobId: id }))
        if (job.accountId !== accountId) {
          return Effect.fail(engineError("UNAUTHORIZED_ACCESS", "This API key has no access to the job", { jobId: id }))
        }
        if (Either.isLeft(transition(job.status, "Cancel"))) {
          return Effect.fail(
            engineError("JOB_CANNOT_BE_CANCELLED", `Only pending jobs can be cancelled; this one is ${job.status}`, {
              jobId: id,
              status: job.status
            })
          )
        }
        const updated = move(job, "Cancel", { completedAt: now }, now)
        return Effect.succeed({ job: updated, refundedMicroCents: job.costMicroCents })
      })),

    claim: ({ leaseMs, maxAttempts, now, workerId }) =>
      atomically(Effect.sync(() => {
        const expired = (j: Job) => j.status === "processing" && j.leaseExpiresAt !== null && j.leaseExpiresAt <= now
        for (const job of state.jobs.values()) {
          if (expired(job) && job.attempts >= maxAttempts) {
            move(job, "Abandon", {
              error: { code: "INTERNAL_ERROR", message: "The job's workers stopped responding; its cost was refunded" },
              completedAt: now,
              leaseOwner: null,
              leaseExpiresAt: null
            }, now)
          }
        }
        const next = [...state.jobs.values()]
          .filter((j) => j.status === "pending" || expired(j))
          .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))[0]
        if (next === undefined) return Option.none()
        return Option.some(move(next, next.status === "pending" ? "Pickup" : "Reclaim", {
          attempts: next.attempts + 1,
          startedAt: next.startedAt ?? now,
          leaseOwner: workerId,
          leaseExpiresAt: now + leaseMs
        }, now))
      })),

    renewLease: (id, workerId, leaseExpiresAt) =>
      atomically(Effect.sync(() => {
        const job = state.jobs.get(id)
        if (job === undefined || job.status !== "processing" || job.leaseOwner !== workerId) return false
        state.jobs.set(id, { ...job, leaseExpiresAt })
        return true
      })),

    complete: (id, workerId, outputs, now) =>
      atomically(Effect.sync(() => {
        const job = state.jobs.get(id)
        if (job === undefined || job.status !== "processing" || job.leaseOwner !== workerId) return Option.none()
        return Option.some(move(job, "Complete", { outputs, completedAt: now, leaseOwner: null, leaseExpiresAt: null }, now))
      })),

    fail: (id, workerId, error, now) =>
      atomically(Effect.sync(() => {
        const job = state.jobs.get(id)
        if (job === undefined) return Option.none()
        const event: JobEvent = workerId === null ? "Abandon" : "Fail"
        if (workerId !== null && job.leaseOwner !== workerId) return Option.none()
        if (Either.isLeft(transition(job.status, event))) return Option.none()
        return Option.some(move(job, event, { error, completedAt: now, leaseOwner: null, leaseExpiresAt: null }, now))
      }))
  }
}
