import { Effect } from "effect"
import type { StoreError } from "../../domain/errors.js"
import { claimUpTo } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import { runJob } from "./runJob.js"

/** Claims and runs one job as `workerId`; false when there was none. */
export const runOnce = (deps: WorkerDeps) => (workerId: string): Effect.Effect<boolean, StoreError> =>
  Effect.scoped(Effect.gen(function*() {
    const keeper = yield* deps.newLeaseKeeper
    const [claimed] = yield* claimUpTo(deps, workerId, 1)
    if (claimed === undefined) return false
    yield* runJob(deps, claimed.job, workerId, claimed.leaseExpiresAt, keeper)
    return true
  }))
