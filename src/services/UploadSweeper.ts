import { Cause, Clock, Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { storedUploadProblem, type Upload } from "../domain/upload.js"
import { BlobStore } from "../ports/BlobStore.js"
import { UploadRepo } from "../ports/UploadRepo.js"

const SWEEP_EVERY_MS = 10_000
const LEASE_MS = 60_000
const BATCH = 100
/**
 * A PUT that started just before its URL closed may still be streaming; the check waits this
 * long after the window so it sees the finished object.
 */
export const VERIFY_GRACE_MS = 10 * 60_000

export interface SweepResult {
  /** Uploads whose stored file was checked and kept. */
  readonly verified: number
  /** Uploads whose stored file broke the size or type limit: deleted and marked expired early. */
  readonly rejected: number
  /** Uploads past their 60-minute lifetime: deleted and marked expired. */
  readonly expired: number
}

/**
 * Keeps uploads honest and temporary. Once an upload URL has closed (plus a grace period) it
 * checks the stored file against the type's size limit and the presigned type, because a
 * presigned object-storage PUT cannot cap the length; an offending file is deleted at once.
 * 60 minutes after creation it deletes the file and marks the upload expired. Durable: it works
 * from the store, so after a restart everything past due goes at the first sweep; several
 * processes share the work through leases.
 */
export const make = Effect.gen(function*() {
  const repo = yield* UploadRepo
  const blobs = yield* BlobStore
  const workerId = `swp_${randomBytes(6).toString("hex")}`

  /** Claims batches until a short one, applying `handle` to each claimed upload. */
  const drain = (
    claim: (now: number) => Effect.Effect<ReadonlyArray<Upload>, unknown>,
    handle: (upload: Upload, now: number) => Effect.Effect<void, unknown>
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const batch = yield* claim(now)
      for (const upload of batch) yield* handle(upload, now)
      return batch.length
    }).pipe(Effect.repeat({ until: (claimed) => claimed < BATCH }))

  /** One pass: checks what arrived through closed upload URLs, then expires what is past due. */
  const sweep = Effect.gen(function*() {
    const result = { verified: 0, rejected: 0, expired: 0 }
    yield* drain(
      (now) => repo.claimUnverified({ workerId, now, closedBy: now - VERIFY_GRACE_MS, leaseMs: LEASE_MS, limit: BATCH }),
      (upload, now) =>
        Effect.gen(function*() {
          const stored = yield* blobs.stat(upload.id)
          const problem = Option.isSome(stored) ? storedUploadProblem(upload, stored.value) : null
          if (problem === null) {
            const size = Option.isSome(stored) ? stored.value.size : null
            if (yield* repo.markVerified({ id: upload.id, workerId, now, size })) result.verified++
            return
          }
          yield* Effect.logWarning("upload rejected after its URL closed").pipe(Effect.annotateLogs({ upload: upload.id, problem }))
          yield* blobs.remove(upload.id)
          if (yield* repo.markExpired(upload.id, workerId)) result.rejected++
        })
    )
    yield* drain(
      (now) => repo.claimExpired({ workerId, now, leaseMs: LEASE_MS, limit: BATCH }),
      (upload) =>
        Effect.gen(function*() {
          yield* blobs.remove(upload.id)
          if (yield* repo.markExpired(upload.id, workerId)) result.expired++
        })
    )
    return result as SweepResult
  })

  /** One sweep, as a named span. */
  const sweepOnce = Effect.withSpan(sweep, "UploadSweeper.sweepOnce")

  /** A sweep at once, then one every SWEEP_EVERY_MS after the last ended; a failed sweep is logged, the next one runs as planned. */
  const start = Effect.asVoid(Effect.forkScoped(
    sweepOnce.pipe(
      Effect.catchCause((cause) => Effect.logError("upload sweep failed", Cause.pretty(cause))),
      Effect.repeat(Schedule.spaced(Duration.millis(SWEEP_EVERY_MS)))
    )
  ))

  return { sweepOnce, start } as const
})

export class UploadSweeper extends Context.Service<UploadSweeper, Effect.Success<typeof make>>()("genjobs/UploadSweeper") {
  static readonly layer = Layer.effect(UploadSweeper, make)
}
