import { Clock, Effect, Exit, Option, Result, type Scope } from "effect"
import { UnauthorizedAccess } from "../../domain/accessRefusals.js"
import type { StoreError } from "../../domain/errors.js"
import type { JobId } from "../../domain/ids.js"
import { type Job, JobCannotBeCancelled, JobNotFound, type OutputItem, transition } from "../../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../../domain/providerHandle.js"
import { deliveryFor } from "../../domain/webhook.js"
import type { ClaimBesideEnding, HeldEnding, JobDrivers } from "../../ports/JobLeaseDriver.js"
import type { ClaimOptions, ClaimRider, JobRepo, RiderOutcome } from "../../ports/JobRepo.js"
import type { JobStoreDriver } from "../../ports/JobStoreDriver.js"
import { makeWriteBatcher } from "../writeBatcher.js"
import { claimOrder } from "../../domain/fairShare.js"
import { NO_LIMITS } from "../../domain/providerLimits.js"
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

/** How old a claim may be for its first completion to wait for its others (its runs are short). */
const HOLD_AFTER_CLAIM_MS = 50
/** The longest a completion waits for the others of its claim. */
const HOLD_MAX_MS = 20

/** A claim riding on completions (ClaimOptions.besideEndings), waiting for a batch that frees its fibers. */
interface Parked {
  readonly options: ClaimOptions & { readonly limit: number }
  readonly rider: ClaimRider
  readonly resume: (answer: Effect.Effect<ReadonlyArray<Job>, StoreError>) => void
  /** Its caller was interrupted after the claim was sent: only `rider.settled` hears of its jobs. */
  cancelled: boolean
  answered: boolean
  /** The idle fibers it took as it was sent. */
  fromIdle: number
}

/** What the completions and the claims riding on them share: `complete`, and `claimBeside` for claimBatch. */
export interface Endings {
  /** Jobs a claim took: while their runs are short, the first of them to end waits for the others (`holdFor`). */
  readonly claimed: (jobs: ReadonlyArray<Job>) => void
  readonly complete: JobRepo["Service"]["complete"]
  readonly claimBeside: (options: ClaimOptions & { readonly limit: number; readonly besideEndings: ClaimRider }) => Effect.Effect<ReadonlyArray<Job>, StoreError>
}

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
 *
 * A worker whose fibers are all busy parks its next claim here (`claimBeside`): the next batch
 * ending one of its jobs takes it, and the claim goes in the same write where the store has
 * `finishHeldAndClaim` (PostgreSQL: the claim costs no statement, commit or round trip of its
 * own), else right after the endings, in the batch writer (two steps, the same rules). It claims
 * one job per fiber those endings free (counted from the jobs the write ended) and per fiber idle
 * then; its `now` is the batch's. A claim rides only on the completion batches: a fiber freed
 * otherwise (a failure, a lost lease) wakes it, and it answers none.
 */
export const makeEndings = (drivers: JobDrivers): Effect.Effect<Endings, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const parked: Array<Parked> = []
    /**
     * Per lease owner (a claim), its jobs not yet completed here and when it claimed them; and
     * how long the last completion write took. A claim's runs of quick jobs end within a round
     * trip of each other: the first to end, sent alone, cost a statement of its own and its
     * batch's answer, the others following one round trip later (docs/decisions.md, "A claim's
     * completions in one write"). While a claim's jobs are left to end and it is at most
     * HOLD_AFTER_CLAIM_MS old, its first completion waits for them, as long as the last write took
     * (HOLD_MAX_MS at most); a job that ends otherwise (a failure, a lost lease) is waited for
     * that long in vain. Entries are dropped once complete, or once old when the map grows.
     */
    const outstanding = new Map<string, { left: number; readonly at: number }>()
    let lastWriteMs = 0
    const noteClaimed = (jobs: ReadonlyArray<Job>) => {
      if (jobs.length < 2) return
      const at = clock.currentTimeMillisUnsafe()
      if (outstanding.size > 256) for (const [owner, entry] of outstanding) if (at - entry.at > HOLD_AFTER_CLAIM_MS) outstanding.delete(owner)
      for (const job of jobs) {
        const owner = job.leaseOwner
        if (owner === null) continue
        const entry = outstanding.get(owner)
        if (entry === undefined) outstanding.set(owner, { left: 1, at })
        else entry.left++
      }
    }
    const ending = (owner: string) => {
      const entry = outstanding.get(owner)
      if (entry !== undefined && --entry.left <= 0) outstanding.delete(owner)
    }
    const holdFor = (first: Completion) => {
      const entry = outstanding.get(first.workerId)
      return entry === undefined || clock.currentTimeMillisUnsafe() - entry.at > HOLD_AFTER_CLAIM_MS ? 0 : Math.min(HOLD_MAX_MS, lastWriteMs)
    }
    const unpark = (claim: Parked) => {
      const at = parked.indexOf(claim)
      if (at < 0) return false
      parked.splice(at, 1)
      claim.rider.waiting(undefined)
      return true
    }
    /** Answers the riding claim once: its rider hears how it went first, so its jobs run even when its caller is gone. */
    const answer = (claim: Parked, outcome: RiderOutcome, claimed: Exit.Exit<ReadonlyArray<Job>, StoreError> | "interrupted") => {
      if (claim.answered) return
      claim.answered = true
      if (claimed !== "interrupted" && Exit.isSuccess(claimed)) noteClaimed(claimed.value)
      claim.rider.settled(outcome, claimed !== "interrupted" && Exit.isSuccess(claimed) ? claimed.value : [])
      if (!claim.cancelled) claim.resume(claimed === "interrupted" ? Effect.interrupt : claimed)
    }
    const claimBeside: Endings["claimBeside"] = (options) =>
      Effect.callback((resume) => {
        const rider = options.besideEndings
        const claim: Parked = { options, rider, resume, cancelled: false, answered: false, fromIdle: 0 }
        parked.push(claim)
        // Woken while a completion of its own is on its way or waits for the writer, it stays:
        // the next batch takes the idle fibers too (and that one's answer wakes it again). Else
        // it would wait for a batch none may send.
        rider.waiting(() => {
          if (!complete.pending((e) => rider.frees(e.workerId)) && unpark(claim)) answer(claim, { fromIdle: 0, limit: 0, at: 0 }, Exit.succeed([]))
        })
        return Effect.sync(() => {
          if (!unpark(claim)) claim.cancelled = true
        })
      })

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

    /** The first parked claim one of `completions` frees a fiber for, taken off the waiting list. */
    const riderFor = (completions: ReadonlyArray<Completion>) => {
      const claim = parked.find((c) => completions.some((e) => c.rider.frees(e.workerId)))
      if (claim !== undefined) unpark(claim)
      return claim
    }

    /**
     * Ends `completions` (the jobs without a webhook URL in one write of their own where the
     * store can, `first`, then the rest in transactions); answers each.
     */
    const endAll = Effect.fnUntraced(function*(
      completions: ReadonlyArray<Completion>,
      first: Effect.Effect<ReadonlyArray<Job>, StoreError> | undefined
    ) {
      const ended = new Map(first === undefined ? [] : (yield* first).map((job) => [job.id, job]))
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

    const withoutWebhook = (completions: ReadonlyArray<Completion>) => {
      const write = drivers.leases.finishHeldWithoutWebhook
      return write === undefined ? undefined : write(completions.map(endingOf))
    }

    /** `completions` ended, and `claim` claimed for the fibers they free, as one write where the store can. */
    const endAndClaim = Effect.fnUntraced(function*(completions: ReadonlyArray<Completion>, claim: Parked) {
      const { options, rider } = claim
      const freeing = completions.filter((e) => rider.frees(e.workerId)).slice(0, options.limit).map((e) => e.id)
      const fromIdle = claim.fromIdle = rider.takeIdle(options.limit - freeing.length)
      const at = yield* Clock.currentTimeMillis
      const batch: ClaimBesideEnding = {
        now: at,
        leaseOwner: options.workerId,
        leaseExpiresAt: at + options.leaseMs,
        limit: fromIdle,
        maxAttempts: options.maxAttempts,
        exclude: (options.limits ?? NO_LIMITS).versions,
        freeing
      }
      const endedIn = (answers: ReadonlyArray<Exit.Exit<Option.Option<Job>, StoreError>>) =>
        completions.filter((e, i) => {
          const exit = answers[i]!
          return freeing.includes(e.id) && Exit.isSuccess(exit) && Option.isSome(exit.value)
        }).length
      const combined = drivers.leases.finishHeldAndClaim
      if (combined === undefined) {
        // Two steps: the endings as a batch without a rider writes them, then the claim.
        const answers = yield* endAll(completions, withoutWebhook(completions)).pipe(
          Effect.onError(() => Effect.sync(() => answer(claim, { fromIdle, limit: 0, at }, Exit.succeed([]))))
        )
        const limit = fromIdle + endedIn(answers)
        const claimed = yield* Effect.exit(limit < 1 ? Effect.succeed([]) : drivers.leases.claimBatch({ ...batch, limit }))
        answer(claim, { fromIdle, limit, at }, Exit.map(claimed, (jobs) => [...jobs].sort(claimOrder)))
        return answers
      }
      const written = yield* Effect.exit(combined(completions.map(endingOf), batch))
      if (Exit.isFailure(written)) {
        // Not sent, as far as the claim goes: its fibers back, and it claims again on its own.
        answer(claim, { fromIdle, limit: 0, at }, Exit.succeed([]))
        return yield* Effect.failCause(written.cause)
      }
      const endedIds = new Set(written.value.ended.map((job) => job.id))
      answer(
        claim,
        { fromIdle, limit: fromIdle + freeing.filter((id) => endedIds.has(id)).length, at },
        Exit.succeed([...written.value.claimed].sort(claimOrder))
      )
      return yield* endAll(completions, Effect.succeed(written.value.ended))
    })

    const complete = yield* makeWriteBatcher((completions: ReadonlyArray<Completion>) => {
      const claim = riderFor(completions)
      const startedAt = clock.currentTimeMillisUnsafe()
      return (claim === undefined
        ? endAll(completions, withoutWebhook(completions))
        // A batch interrupted on its way (the repo's scope closing): its claim answers interrupted.
        : Effect.onInterrupt(endAndClaim(completions, claim), () =>
          Effect.sync(() => answer(claim, { fromIdle: claim.fromIdle, limit: claim.fromIdle, at: 0 }, "interrupted")))).pipe(
        Effect.ensuring(Effect.sync(() => (lastWriteMs = clock.currentTimeMillisUnsafe() - startedAt)))
      )
    }, { hold: holdFor })
    return {
      complete: (id, workerId, outputs, now, providerRoute) =>
        Effect.suspend(() => {
          ending(workerId)
          return Effect.flatten(complete({ id, workerId, outputs, now, providerRoute }))
        }),
      claimBeside,
      claimed: noteClaimed
    }
  })

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
