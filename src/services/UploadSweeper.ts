import { Cause, Clock, Context, Duration, Effect, Exit, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { BlobStore } from "../ports/BlobStore.js"
import { UploadRepo } from "../ports/UploadRepo.js"

const SWEEP_EVERY_MS = 10_000
const LEASE_MS = 60_000
const BATCH = 100

/**
 * Deletes uploads' files 60 minutes after creation and marks them expired. Durable: it works
 * from the store, so after a restart everything past due goes at the first sweep; several
 * processes share the work through leases.
 */
export const make = Effect.gen(function*() {
  const repo = yield* UploadRepo
  const blobs = yield* BlobStore
  const workerId = `swp_${randomBytes(6).toString("hex")}`

  /** One pass; answers how many uploads it expired. */
  const sweepOnce = Effect.gen(function*() {
    let expired = 0
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const due = yield* repo.claimExpired({ workerId, now, leaseMs: LEASE_MS, limit: BATCH })
      for (const upload of due) {
        yield* blobs.remove(upload.id)
        if (yield* repo.markExpired(upload.id, workerId)) expired++
      }
      if (due.length < BATCH) return expired
    }
  })

  const start = Effect.gen(function*() {
    yield* Effect.forkScoped(Effect.forever(
      Effect.exit(sweepOnce).pipe(
        Effect.tap((exit) => Exit.isFailure(exit) ? Effect.logError("upload sweep failed", Cause.pretty(exit.cause)) : Effect.void),
        Effect.zipRight(Effect.sleep(Duration.millis(SWEEP_EVERY_MS)))
      )
    ))
  })

  return { sweepOnce, start } as const
})

export class UploadSweeper extends Context.Tag("genjobs/UploadSweeper")<UploadSweeper, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(UploadSweeper, make)
}
