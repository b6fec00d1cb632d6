import { Clock, Effect } from "effect"
import type { DispatchDeps } from "./deps.js"

/** Leases one due delivery; each claim gets its own lease holder, so a stale attempt never records over a new one. */
export const makeClaim = ({ config, deliveries, leaseMs }: Pick<DispatchDeps, "config" | "deliveries" | "leaseMs">): DispatchDeps["claim"] => {
  let claims = 0
  return (workerId) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* deliveries.claimDue({
        workerId: `${workerId}_${++claims}`,
        now,
        leaseMs,
        maxPerAccount: config.webhookDeliveriesPerAccount
      })
    })
}
