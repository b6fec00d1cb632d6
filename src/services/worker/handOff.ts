import { Clock, Effect, Option, Ref } from "effect"
import type { Job } from "../../domain/job.js"
import type { ReserveSlot } from "../LocalWorkers.js"
import type { WorkerDeps } from "./deps.js"
import { limitedIn } from "./limitPlans.js"
import type { WorkerPool } from "./pool.js"

/**
 * Offers an idle fiber to a submit of this process (LocalWorkers): a job the store writes as
 * that fiber's claim joins the intake as a claimed one does. None while draining, while a
 * backlog keeps every fiber busy, or for a limited version (its room is counted by the limited
 * claim alone).
 */
export const reserveSlot = ({ config, limits }: Pick<WorkerDeps, "config" | "limits">, pool: WorkerPool): ReserveSlot => (job) =>
  Effect.gen(function*() {
    if (!(yield* Ref.get(pool.accepting)) || !(yield* Ref.get(pool.queueDry))) return Option.none()
    const plan = yield* Effect.option(limits.current)
    if (Option.isNone(plan) || limitedIn(plan.value, job)) return Option.none()
    if (!(yield* Ref.modify(pool.idle, (n) => (n > 0 ? [true, n - 1] : [false, n])))) return Option.none()
    const now = yield* Clock.currentTimeMillis
    const lease = { now, leaseOwner: pool.nextWorkerId(), leaseExpiresAt: now + config.leaseMs, maxAttempts: config.maxAttempts }
    return Option.some({
      lease,
      run: (claimed: Job) => Effect.sync(() => pool.intake([{ job: claimed, leaseExpiresAt: lease.leaseExpiresAt }])),
      release: pool.fiberFreed
    })
  })
