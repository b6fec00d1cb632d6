import { Effect, Either, Option, type Scope } from "effect"
import { idempotencyConflict, refuseSubmit } from "../domain/admission.js"
import { type BudgetUse, periodStart, refuseForBudget } from "../domain/budget.js"
import { engineError, StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import { type ClaimLease, type Job, type JobEvent, type OutputItem, refundsOnEntry, transition } from "../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../domain/providerHandle.js"
import { candidateCounts, type LimitPlan, NO_LIMITS, pickWithinLimits, roomsOf } from "../domain/providerLimits.js"
import { DAY_WINDOW, limitedWindows, MINUTE_WINDOW, NO_USAGE } from "../domain/rateLimit.js"
import { deliveryFor } from "../domain/webhook.js"
import type { JobDrivers } from "../ports/JobLeaseDriver.js"
import { chargeOf } from "../ports/JobStoreDriver.js"
import type { JobRepo, SubmitCommand, SubmitOutcome } from "../ports/JobRepo.js"
import { makeWriteBatcher } from "./writeBatcher.js"

const abandonedLease = {
  code: "INTERNAL_ERROR",
  message: "The job's workers stopped responding; its cost was refunded"
} as const

const holdsLease = (job: Job, workerId: string) => job.status === "processing" && job.leaseOwner === workerId

const releasedLease = { leaseOwner: null, leaseExpiresAt: null } as const

/** The name of the reaper's pass lease. */
const REAPER = "jobs-reaper"

/** The name of the queue relay's pass lease. */
const RELAY = "queue-relay"

/** Job ends one reaper pass folds into their accounts' counts at most; submits fold their own meanwhile. */
const FOLD_LIMIT = 10_000

const oldestFirst = (a: Job, b: Job) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The job repository over any store's drivers: every job rule lives here, once for all stores.
 * `store` keeps jobs, money and webhook rows; `leases` is the store's own queue.
 */
export const makeJobRepo = ({ leases, store: driver }: JobDrivers): Effect.Effect<JobRepo["Type"], never, Scope.Scope> =>
  Effect.gen(function*() {
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

    /** The balance read under the account's lock, when the conditional charge did not go through. */
    const lockedBalance = (job: Job) =>
      Effect.flatMap(driver.lockAccount(job.accountId), (account) =>
        Option.match(account, {
          onNone: () => Effect.fail(engineError("INVALID_API_KEY", "The account no longer exists")),
          onSome: (found) => Effect.succeed(found.balanceMicroCents)
        }))

    /**
     * Pending jobs of limited versions, in one transaction under the limits' lock: the room of
     * each scope counted from the jobs processing and the starts of the last minute, the oldest
     * candidates that fit taken, and their starts counted.
     */
    const claimLimited = (plan: LimitPlan, limit: number, lease: ClaimLease, maxAttempts: number) =>
      driver.transaction(Effect.gen(function*() {
        yield* leases.lockProviderLimits
        const usage = yield* leases.readLimitUsage(plan.versions, plan.scopes.map((scope) => scope.key), lease.now)
        const rooms = roomsOf(plan, usage)
        const counts = candidateCounts(plan, rooms, limit)
        if (counts.length === 0) return []
        const candidates = [...(yield* leases.pendingOf(counts))].sort(oldestFirst)
        const { picked, starts } = pickWithinLimits(plan, rooms, candidates, limit)
        if (picked.length === 0) return []
        const claimed = yield* leases.claimIds(picked.map((job) => job.id), { ...lease, maxAttempts, exclude: [] })
        yield* leases.recordStarts(starts, lease.now)
        return claimed
      }))

    const claimBatch: JobRepo["Type"]["claimBatch"] = ({ leaseMs, limit, limitedOnly, limits, maxAttempts, now, workerId }) =>
      Effect.gen(function*() {
        if (limit < 1) return []
        const lease: ClaimLease = { now, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }
        const plan = limits ?? NO_LIMITS
        const limited = plan.versions.length === 0 ? [] : yield* claimLimited(plan, limit, lease, maxAttempts)
        const rest = limit - limited.length
        const others = rest < 1 || limitedOnly === true
          ? []
          // One atomic statement of its own: no transaction around it (two round trips fewer on PostgreSQL).
            : yield* leases.claimBatch({ ...lease, limit: rest, maxAttempts, exclude: plan.versions })
        return [...limited, ...others].sort(oldestFirst)
      })

    /** Provider states of many running jobs in one conditional write; no transaction needed around one statement. */
    const saveProviderState = yield* makeWriteBatcher(
      (states: ReadonlyArray<{ readonly id: JobId; readonly leaseOwner: string; readonly state: ProviderState }>) =>
        Effect.map(leases.updateProviderStates(states), (written) => {
          const held = new Set(written)
          return states.map((s) => held.has(s.id))
        })
    )

    /**
     * Completions of many jobs in one transaction: one conditional write ends those still held by
     * their workers, and their webhook deliveries are written with them.
     */
    const complete = yield* makeWriteBatcher(
      (endings: ReadonlyArray<{
        readonly id: JobId
        readonly workerId: string
        readonly outputs: ReadonlyArray<OutputItem>
        readonly now: number
        readonly providerRoute: ProviderRouteRef | undefined
      }>) =>
        driver.transaction(Effect.gen(function*() {
          const status = Either.getOrThrow(transition("processing", "Complete"))
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
          if (deliveries.length > 0) yield* driver.insertDeliveries(deliveries)
          return endings.map((e) => Option.fromNullable(byId.get(e.id)))
        }))
    )

    const replay = (jobId: JobId) =>
      Effect.flatMap(driver.getJob(jobId), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(new StoreError({ message: `Idempotency record points at missing job ${jobId}` })),
          onSome: (job) => Effect.succeed<SubmitOutcome>({ _tag: "Replayed", job })
        }))

    const submitInTransaction = ({ budgets = [], handOff, idempotency, job, maxConcurrentJobs, rateLimits }: SubmitCommand) =>
      driver.transaction(Effect.gen(function*() {
        if (idempotency !== undefined) {
          const previous = yield* driver.claimIdempotency(job.accountId, idempotency.key, {
            requestHash: idempotency.requestHash,
            jobId: job.id,
            createdAt: job.createdAt
          }, idempotency.notBefore)
          if (Option.isSome(previous)) {
            if (previous.value.requestHash !== idempotency.requestHash) return yield* Effect.fail(idempotencyConflict(idempotency.key))
            return yield* replay(previous.value.jobId)
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
        const balance = Option.isSome(charged) ? charged.value.balanceBefore : yield* lockedBalance(job)
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

    return {
      // A submit that only needs the balance and the active jobs checked (no idempotency key,
      // rate limit or budget) is one atomic write, and may go straight to an idle local worker;
      // anything it does not admit is decided, refusal and its reason included, in the transaction.
      submit: (request) =>
        Effect.gen(function*() {
          const budgeted = request.budgets !== undefined && request.budgets.length > 0
          if (request.idempotency === undefined && limitedWindows(request.rateLimits).length === 0 && !budgeted) {
            const written = yield* driver.submit(request.job, request.maxConcurrentJobs, request.handOff)
            if (Option.isSome(written)) return { _tag: "Created", job: written.value } satisfies SubmitOutcome
          }
          return yield* submitInTransaction(request)
        }),

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

      claim: (options) => Effect.map(claimBatch({ ...options, limit: 1 }), (jobs) => Option.fromNullable(jobs[0])),

      claimBatch,

      claimIds: (ids, { leaseMs, limits, maxAttempts, now, workerId }) =>
        Effect.map(
          leases.claimIds(ids, { now, leaseOwner: workerId, leaseExpiresAt: now + leaseMs, maxAttempts, exclude: (limits ?? NO_LIMITS).versions }),
          (jobs) => [...jobs].sort(oldestFirst)
        ),

      queueGaps: ({ after, graceMs, limit, maxAttempts, now, passMs, workerId }) =>
        driver.transaction(Effect.gen(function*() {
          if (!(yield* leases.takeLease(RELAY, workerId, now, now + passMs))) return Option.none()
          return Option.some(yield* leases.queueGaps({ now, graceMs, after, maxAttempts, limit }))
        })),

      reap: ({ limit, maxAttempts, now, passMs, workerId }) =>
        Effect.gen(function*() {
          const pass = yield* driver.transaction(Effect.gen(function*() {
            if (!(yield* leases.takeLease(REAPER, workerId, now, now + passMs))) return Option.none<number>()
            let abandoned = 0
            for (const job of yield* leases.findExhausted(now, maxAttempts, limit)) {
              const moved = yield* move(job, "Abandon", { error: abandonedLease, completedAt: now, ...releasedLease }, now)
              if (Option.isSome(moved)) abandoned++
            }
            yield* leases.pruneWindows(now)
            return Option.some(abandoned)
          }))
          if (Option.isNone(pass)) return 0
          // A statement of its own, still under the pass's lease: whatever it meets (a deadlock
          // with a host's bulk insert, say), the pass's abandonments stand, and the next pass folds.
          yield* leases.foldJobEnds(FOLD_LIMIT).pipe(
            Effect.catchAll((error) => Effect.logWarning("job ends could not be folded into their accounts' counts", error.message))
          )
          return pass.value
        }),

      renewLeases: (held, now, leaseMs) =>
        held.length === 0 ? Effect.succeed([]) : driver.transaction(leases.renewLeases(held, now, now + leaseMs)),

      saveProviderState: (id, workerId, state) => saveProviderState({ id, leaseOwner: workerId, state }),

      complete: (id, workerId, outputs, now, providerRoute) => complete({ id, workerId, outputs, now, providerRoute }),

      fail: (id, workerId, error, now, providerRoute) =>
        driver.transaction(Effect.gen(function*() {
          const job = yield* driver.lockJob(id)
          if (Option.isNone(job)) return Option.none<Job>()
          // A worker fails only the job it holds; without a worker the job is abandoned, whoever holds it.
          if (workerId !== null && !holdsLease(job.value, workerId)) return Option.none<Job>()
          const changes = { error, completedAt: now, ...releasedLease, ...(providerRoute === undefined ? {} : { providerRoute }) }
          return yield* move(job.value, workerId === null ? "Abandon" : "Fail", changes, now)
        }))
    } satisfies JobRepo["Type"]
  })
