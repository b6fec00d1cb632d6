import { Effect } from "effect"
import type { StoreError } from "../../domain/errors.js"
import type { JobRunBook } from "../providerCalls.js"
import { claimUpTo } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import { runJob } from "./runJob.js"

/** Claims and runs one job as `workerId`; false when there was none. */
export const runOnce = (deps: WorkerDeps) =>
  Effect.fn("genjobs.worker.runOnce")(function*(workerId: string): Effect.fn.Return<boolean, StoreError> {
    return yield* Effect.scoped(Effect.gen(function*() {
      const keeper = yield* deps.newLeaseKeeper
      const [claimed] = yield* claimUpTo(deps, workerId, 1)
      if (claimed === undefined) return false
      const book: JobRunBook = { lease: keeper.hold(claimed.job.id, workerId, claimed.leaseExpiresAt), holds: [] }
      yield* runJob(deps, claimed.job, book).pipe(
        Effect.ensuring(Effect.sync(() => {
          keeper.release(book.lease)
          for (const release of book.holds) release()
        }))
      )
      return true
    }))
  })
