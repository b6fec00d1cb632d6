import { Effect, Option } from "effect"
import { idempotencyConflict, refuseSubmit } from "../../domain/admission.js"
import { type BudgetUse, periodStart, refuseForBudget } from "../../domain/budget.js"
import { StoreError } from "../../domain/errors.js"
import { InvalidApiKey } from "../../domain/accessRefusals.js"
import type { JobId } from "../../domain/ids.js"
import type { Job } from "../../domain/job.js"
import { DAY_WINDOW, limitedWindows, MINUTE_WINDOW, NO_USAGE } from "../../domain/rateLimit.js"
import type { JobRepo, SubmitCommand, SubmitOutcome } from "../../ports/JobRepo.js"
import { chargeOf, type JobStoreDriver } from "../../ports/JobStoreDriver.js"
import { submitGates } from "./submitGates.js"

/** The balance read under the account's lock, when the conditional charge did not go through. */
const lockedBalance = (driver: JobStoreDriver, job: Job) =>
  Effect.flatMap(driver.lockAccount(job.accountId), (account) =>
    Option.match(account, {
      onNone: () => Effect.fail(new InvalidApiKey({ message: "The account no longer exists" })),
      onSome: (found) => Effect.succeed(found.balanceMicroCents)
    }))

const replay = (driver: JobStoreDriver, jobId: JobId) =>
  Effect.flatMap(driver.getJob(jobId), (found) =>
    Option.match(found, {
      onNone: () => Effect.fail(new StoreError({ message: `Idempotency record points at missing job ${jobId}` })),
      onSome: (job) => Effect.succeed<SubmitOutcome>({ _tag: "Replayed", job })
    }))

/** A submit with every check, in one transaction: idempotency, charge, counts, rate windows and budgets. */
const submitInTransaction = (driver: JobStoreDriver, { budgets = [], handOff, idempotency, job, maxConcurrentJobs, rateLimits }: SubmitCommand) =>
  driver.transaction(Effect.gen(function*() {
    if (idempotency !== undefined) {
      const previous = yield* driver.claimIdempotency(job.accountId, idempotency.key, {
        requestHash: idempotency.requestHash,
        jobId: job.id,
        createdAt: job.createdAt
      }, idempotency.notBefore)
      if (Option.isSome(previous)) {
        if (previous.value.requestHash !== idempotency.requestHash) return yield* Effect.fail(idempotencyConflict(idempotency.key))
        return yield* replay(driver, previous.value.jobId)
      }
    }
    // The charge takes the account's lock, serialising its submits (its keys' too) across
    // processes: the counts and the spend below see every submit admitted before. A refusal
    // rolls the charge back.
    const sinceOf = (scope: BudgetUse["scope"]) => {
      const found = budgets.find((b) => b.scope === scope)
      return found === undefined ? undefined : periodStart(found.budget.period, job.createdAt)
    }
    const charge = {
      ...chargeOf(job),
      spendSince: budgets.length === 0 ? undefined : { account: sinceOf("account"), key: sinceOf("key") }
    }
    const charged = yield* driver.chargeAccount(charge)
    const balance = Option.isSome(charged) ? charged.value.balanceBefore : yield* lockedBalance(driver, job)
    const key = { accountId: job.accountId, model: job.model, version: job.version }
    const windows = limitedWindows(rateLimits)
    const usage = windows.length === 0 ? [] : yield* driver.readRateWindows(key, job.createdAt, windows)
    const usageOf = (window: typeof MINUTE_WINDOW) => usage[windows.indexOf(window)] ?? NO_USAGE
    const refusal = refuseSubmit({
      now: job.createdAt,
      costMicroCents: job.costMicroCents,
      balanceMicroCents: balance,
      activeJobs: yield* driver.activeJobs(job.accountId),
      maxConcurrentJobs,
      rateLimits,
      minute: usageOf(MINUTE_WINDOW),
      day: usageOf(DAY_WINDOW)
    })
    if (refusal !== undefined) return yield* Effect.fail(refusal)
    // The balance fell short of the conditional charge but covers the job under the lock: credit came in between.
    const made = Option.isSome(charged) ? charged : yield* driver.chargeAccount(charge)
    if (Option.isNone(made)) {
      return yield* Effect.fail(new StoreError({ message: `The balance of ${job.accountId} moved under its lock` }))
    }
    const spent = { account: made.value.accountSpent, key: made.value.keySpent }
    // The spend read includes this charge: what was spent before it is that less the cost.
    const uses = budgets.map(({ budget, scope }): BudgetUse => ({
      scope,
      budget,
      spentMicroCents: (spent[scope] ?? 0) - job.costMicroCents
    }))
    const overBudget = refuseForBudget(job.createdAt, job.costMicroCents, uses)
    if (overBudget !== undefined) return yield* Effect.fail(overBudget)
    if (windows.length > 0) yield* driver.recordRateWindows(key, job.createdAt, windows)
    return { _tag: "Created", job: yield* driver.insertJob(job, handOff) } satisfies SubmitOutcome
  }))

/**
 * A submit that only needs the balance and the active jobs checked (no idempotency key, rate
 * limit or budget) is one atomic write, and may go straight to an idle local worker; so is a
 * gated one where the store can (submitGated), its idempotent replay included. Anything they
 * do not admit is decided, refusal and its reason included, in the transaction.
 */
export const submit = (driver: JobStoreDriver): JobRepo["Service"]["submit"] => (request) =>
  Effect.gen(function*() {
    const gates = submitGates(request)
    if (gates === undefined) {
      const written = yield* driver.submit(request.job, request.maxConcurrentJobs, request.handOff)
      if (Option.isSome(written)) {
        const woken = driver.submitWakesClaimers === true && request.handOff === undefined
        return { _tag: "Created", job: written.value, ...(woken ? { claimersWoken: true } : {}) } satisfies SubmitOutcome
      }
    } else if (driver.submitGated !== undefined) {
      const gated = yield* driver.submitGated(request.job, request.maxConcurrentJobs, request.handOff, gates)
      if (gated._tag === "Created") return { _tag: "Created", job: gated.job } satisfies SubmitOutcome
      if (gated._tag === "Recorded" && request.idempotency !== undefined) {
        if (gated.record.requestHash !== request.idempotency.requestHash) return yield* Effect.fail(idempotencyConflict(request.idempotency.key))
        return Option.isSome(gated.job)
          ? { _tag: "Replayed", job: gated.job.value } satisfies SubmitOutcome
          : yield* replay(driver, gated.record.jobId)
      }
    }
    return yield* submitInTransaction(driver, request)
  })
