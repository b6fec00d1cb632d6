import { Deferred, Effect, Exit } from "effect"
import type { StoreError } from "../../domain/errors.js"
import type { JobRunBook, WatchOutcome } from "../providerCalls.js"
import { claimUpTo } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import { endWatched, runJob } from "./runJob.js"

/** Claims and runs one job as `workerId`, to its end (a started generation waits on a watch list of its own); false when there was none. */
export const runOnce = (deps: WorkerDeps) =>
  Effect.fn("genjobs.worker.runOnce")(function*(workerId: string): Effect.fn.Return<boolean, StoreError> {
    return yield* Effect.scoped(Effect.gen(function*() {
      const keeper = yield* deps.newLeaseKeeper
      const watcher = yield* deps.calls.newWatcher
      const [claimed] = yield* claimUpTo(deps, workerId, 1)
      if (claimed === undefined) return false
      const ended = yield* Deferred.make<WatchOutcome>()
      const book: JobRunBook = {
        lease: keeper.hold(claimed.job.id, workerId, claimed.leaseExpiresAt),
        holds: [],
        watcher,
        ended: (outcome) => Deferred.doneUnsafe(ended, Exit.succeed(outcome))
      }
      yield* runJob(deps, claimed.job, book).pipe(
        Effect.flatMap((watched) => (watched ? Effect.flatMap(Deferred.await(ended), (outcome) => endWatched(deps, claimed.job, book, outcome)) : Effect.void)),
        Effect.ensuring(Effect.sync(() => {
          keeper.release(book.lease)
          for (const release of book.holds) release()
        }))
      )
      return true
    }))
  })
