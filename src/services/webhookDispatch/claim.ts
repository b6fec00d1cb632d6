import { Clock, Effect } from "effect"
import type { DispatchDeps } from "./deps.js"

/**
 * Leases up to `limit` due deliveries; each claim gets its own lease holder, so a stale attempt
 * never records over a new one (recordAttempt matches the delivery and its holder).
 */
export const makeClaim = ({ config, deliveries, leaseMs }: Pick<DispatchDeps, "config" | "deliveries" | "leaseMs">): DispatchDeps["claim"] => {
  let claims = 0
  return (workerId, limit) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* deliveries.claimDue({
        workerId: `${workerId}_${++claims}`,
        now,
        leaseMs,
        limit,
        maxPerAccount: config.webhookDeliveriesPerAccount
      })
    })
}
