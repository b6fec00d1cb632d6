import { Effect, Option } from "effect"
import { isAfterCursor } from "../../src/domain/cursor.js"
import type { WebhookDelivery } from "../../src/domain/webhook.js"
import { fairClaims } from "../../src/domain/webhookClaims.js"
import type { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import type { MemoryState } from "./state.js"

export const webhookDeliveryRepo = (state: MemoryState): WebhookDeliveryRepo["Service"] => {
  const atomically = state.lock.withPermits(1)
  return {
    claimsBesideRecords: false,
    claimDue: ({ leaseMs, limit, maxPerAccount, now, workerId }) =>
      atomically(Effect.sync(() => {
        const live = new Map<string, number>()
        const due: Array<WebhookDelivery & { readonly nextAttemptAt: number }> = []
        for (const d of state.deliveries.values()) {
          if (d.status !== "pending") continue
          if (d.leaseExpiresAt !== null && d.leaseExpiresAt > now) live.set(d.accountId, (live.get(d.accountId) ?? 0) + 1)
          else if (d.nextAttemptAt !== null && d.nextAttemptAt <= now) due.push({ ...d, nextAttemptAt: d.nextAttemptAt })
        }
        return fairClaims(due, live, maxPerAccount, limit).map((d) => {
          const claimed = { ...state.deliveries.get(d.id)!, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }
          state.deliveries.set(d.id, claimed)
          return claimed
        })
      })),
    nextAttemptAfter: (now) =>
      Effect.sync(() => {
        let earliest: number | undefined
        for (const d of state.deliveries.values()) {
          if (d.status === "pending" && d.nextAttemptAt !== null && d.nextAttemptAt > now) {
            earliest = Math.min(earliest ?? d.nextAttemptAt, d.nextAttemptAt)
          }
        }
        return Option.fromNullishOr(earliest)
      }),
    recordAttempt: (id, workerId, attempt, outcome) =>
      atomically(Effect.sync(() => {
        const d = state.deliveries.get(id)
        if (d === undefined || d.status !== "pending" || d.leaseOwner !== workerId) return false
        state.deliveries.set(id, {
          ...d,
          status: outcome.status,
          attempts: [...d.attempts, attempt],
          nextAttemptAt: outcome.status === "pending" ? outcome.nextAttemptAt : null,
          leaseOwner: null,
          leaseExpiresAt: null
        })
        return true
      })),
    forJob: (jobId) => Effect.sync(() => [...state.deliveries.values()].filter((d) => d.jobId === jobId)),
    list: ({ accountId, after, jobId, limit, status }) =>
      Effect.sync(() =>
        [...state.deliveries.values()]
          .filter((d) =>
            d.accountId === accountId && (jobId === undefined || d.jobId === jobId) &&
            (status === undefined || d.status === status) &&
            (after === undefined || isAfterCursor({ createdAt: d.createdAt, id: d.id }, after))
          )
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(0, limit + 1)
      ),
    get: (id) => Effect.sync(() => Option.fromNullishOr(state.deliveries.get(id))),
    retry: (id, now) =>
      atomically(Effect.sync(() => {
        const d = state.deliveries.get(id)
        if (d === undefined || d.status !== "failed") return Option.none()
        const again = { ...d, status: "pending" as const, nextAttemptAt: now, leaseOwner: null, leaseExpiresAt: null }
        state.deliveries.set(id, again)
        return Option.some(again)
      }))
  }
}
