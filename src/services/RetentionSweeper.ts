import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { StoreError } from "../domain/errors.js"
import { jobFilePrefix, retainedStatuses, retentionCutoffs, unsentDeliveries } from "../domain/retention.js"
import { BlobStore } from "../ports/BlobStore.js"
import { ChangeFeed } from "../ports/ChangeFeed.js"
import { RetentionRepo } from "../ports/RetentionRepo.js"
import { EngineConfig } from "./EngineConfig.js"

/** The name of the retention pass's lease. */
const RETENTION = "retention-sweeper"

export interface RetentionSweep {
  /** Ended jobs removed, past `jobRetentionMs`. */
  readonly jobs: number
  /** Their sent or failed webhook deliveries. */
  readonly deliveries: number
  /** Their output files. */
  readonly files: number
  /** Idempotency records past their window. */
  readonly idempotencyKeys: number
  /** Changes feed entries past `changesRetentionMs`. */
  readonly changes: number
}

const filter = { statuses: retainedStatuses, unsentDeliveries }

/**
 * Removes what is past retention: idempotency records once their window has passed, always; and,
 * when `jobRetentionMs` is set, jobs that ended that long ago, with their sent or failed webhook
 * deliveries and their output files; and changes feed entries past `changesRetentionMs`, always.
 * A job whose webhook is still to be sent stays until it is
 * sent or fails. The ledger is never touched. Works in batches of `retentionBatchSize`, each its
 * own transaction; processes share the work through a lease, so one runs each pass.
 */
export const make = Effect.gen(function*() {
  const repo = yield* RetentionRepo
  const feed = yield* ChangeFeed
  const blobs = yield* BlobStore
  const config = yield* EngineConfig
  const owner = `ret_${randomBytes(6).toString("hex")}`
  const limit = config.retentionBatchSize

  /** Takes the pass, or keeps it for another stretch; false while another process holds it. */
  const holdPass = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    repo.takeLease(RETENTION, owner, now, now + 2 * config.retentionSweepIntervalMs))

  /**
   * One batch of ended jobs: files first, then rows. A crash between the two leaves rows whose
   * files are gone, which the next pass finishes; the other order would strand files that no
   * row leads to any more.
   */
  const jobBatch = (endedBy: number) =>
    Effect.gen(function*() {
      const ids = yield* repo.endedJobs({ ...filter, endedBy, limit })
      if (ids.length === 0) return { jobs: 0, deliveries: 0, files: 0 }
      const files = yield* blobs.removeByPrefix(ids.map(jobFilePrefix))
      const removed = yield* repo.removeJobs({ ...filter, jobIds: ids })
      return { files, ...removed }
    })

  /**
   * Runs batches until one removes fewer than a batch, each uninterruptible so a drain never
   * stops one halfway; false when the pass was lost to another process in between.
   */
  const drain = (batch: Effect.Effect<number, StoreError>) =>
    Effect.gen(function*() {
      while ((yield* Effect.uninterruptible(batch)) >= limit) {
        if (!(yield* holdPass)) return false
      }
      return true
    })

  /** One pass, if this process holds (or takes) it; None when another process does. */
  const sweep: Effect.Effect<Option.Option<RetentionSweep>, StoreError> = Effect.gen(function*() {
    if (!(yield* holdPass)) return Option.none()
    const now = yield* Clock.currentTimeMillis
    const cutoffs = retentionCutoffs(config, now)
    const swept = { jobs: 0, deliveries: 0, files: 0, idempotencyKeys: 0, changes: 0 }
    // Logged however the pass ends: what a failed or interrupted pass removed is gone all the same.
    const report = Effect.suspend(() =>
      swept.jobs + swept.deliveries + swept.files + swept.idempotencyKeys + swept.changes > 0
        ? Effect.logInfo("retention sweep removed what was past retention").pipe(Effect.annotateLogs({ ...swept }))
        : Effect.void
    )
    yield* Effect.gen(function*() {
      const held = yield* drain(
        Effect.tap(repo.purgeIdempotency(cutoffs.idempotencyCreatedBefore, limit), (n) =>
          Effect.sync(() => {
            swept.idempotencyKeys += n
          }))
      )
      if (!held) return
      const changesHeld = yield* drain(
        Effect.tap(feed.purge(now - config.changesRetentionMs, limit), (n) =>
          Effect.sync(() => {
            swept.changes += n
          }))
      )
      const { jobsEndedBy } = cutoffs
      if (!changesHeld || jobsEndedBy === null) return
      yield* drain(Effect.map(jobBatch(jobsEndedBy), (batch) => {
        swept.jobs += batch.jobs
        swept.deliveries += batch.deliveries
        swept.files += batch.files
        return batch.jobs
      }))
    }).pipe(Effect.ensuring(report))
    return Option.some(swept as RetentionSweep)
  })

  /** One sweep, as a named span (the loop below and a host's own call alike). */
  const sweepOnce = Effect.withSpan(sweep, "RetentionSweeper.sweepOnce")

  /**
   * Sweeps now and every `retentionSweepIntervalMs` for as long as the current scope is open.
   * Closing it lets a batch under way finish (up to `drainTimeoutMs`) and starts no other.
   */
  const start = Effect.gen(function*() {
    // The loop runs in a scope of its own inside the caller's, so the caller's close can bound the
    // wait: closing `sweeps` interrupts the loop, which finishes its uninterruptible batch first;
    // past `drainTimeoutMs` the close stops waiting and the batch is abandoned (it ends by itself
    // and starts no other). Effect 4's Scope.close is uninterruptible, so it runs in a fiber of its
    // own and only the wait for it, made interruptible (finalizers run uninterruptibly), is timed
    // out. `sweeps` is closed by then, so the caller's own close of it adds no wait.
    const sweeps = yield* Scope.fork(yield* Effect.scope, "sequential")
    yield* Effect.forkIn(
      Effect.forever(
        Effect.exit(sweepOnce).pipe(
          Effect.tap((exit) => Exit.isFailure(exit) ? Effect.logError("retention sweep failed", Cause.pretty(exit.cause)) : Effect.void),
          Effect.andThen(Effect.sleep(Duration.millis(config.retentionSweepIntervalMs)))
        )
      ),
      sweeps
    )
    yield* Effect.addFinalizer((exit) =>
      // Started at once: the loop is interrupted now, before it can start its next batch.
      Effect.flatMap(Effect.forkDetach(Scope.close(sweeps, exit), { startImmediately: true }), (closing) =>
        Effect.interruptible(Fiber.await(closing)).pipe(Effect.timeout(Duration.millis(config.drainTimeoutMs)), Effect.ignore))
    )
  })

  return { sweepOnce, start } as const
})

export class RetentionSweeper extends Context.Service<RetentionSweeper, Effect.Success<typeof make>>()("genjobs/RetentionSweeper") {
  static readonly layer = Layer.effect(RetentionSweeper, make)
}
