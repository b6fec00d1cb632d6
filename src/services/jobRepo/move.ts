import { Effect, Option, Result } from "effect"
import { type Job, type JobEvent, refundsOnEntry, transition } from "../../domain/job.js"
import { deliveryFor } from "../../domain/webhook.js"
import type { JobStoreDriver } from "../../ports/JobStoreDriver.js"

export const holdsLease = (job: Job, workerId: string) => job.status === "processing" && job.leaseOwner === workerId

export const releasedLease = { leaseOwner: null, leaseExpiresAt: null } as const

/**
 * Applies an event through the state machine and settles what the new status implies: the
 * refund and the webhook outbox row (the changes feed's entry comes with the write). None when the machine refuses the event, or when the
 * conditional write finds the job changed since it was read (a race lost): then nothing else
 * is written, so a transition is never settled twice.
 */
export const move = (driver: JobStoreDriver, job: Job, event: JobEvent, changes: Partial<Job>, now: number) =>
  Result.match(transition(job.status, event), {
    onFailure: () => Effect.succeed(Option.none<Job>()),
    onSuccess: (status) =>
      Effect.gen(function*() {
        const next: Job = { ...job, ...changes, status }
        // The changes feed's entry is written with the job (JobStoreDriver.updateJob).
        if (!(yield* driver.updateJob(next, { status: job.status, attempts: job.attempts }, now))) return Option.none<Job>()
        // A free job's end is posted too: no ledger line, but its rollup counts the outcome.
        if (refundsOnEntry(status)) {
          yield* driver.postLedger({
            accountId: job.accountId,
            jobId: job.id,
            kind: "refund",
            amountMicroCents: job.costMicroCents,
            now,
            keyId: job.apiKeyId ?? null,
            model: job.model,
            chargedAt: job.createdAt,
            outcome: status === "failed" ? "failed" : "cancelled"
          })
        }
        const delivery = deliveryFor(next, now)
        if (delivery !== undefined) yield* driver.insertDeliveries([delivery])
        return Option.some(next)
      })
  })
