import { Clock, Effect } from "effect"
import { type AuditAction, type AuditActor, newAuditId, redact } from "../../domain/audit.js"
import type { StoreError } from "../../domain/errors.js"
import type { AdminDeps } from "./deps.js"

/** The change with its audit entry, in the same transaction; `summary` is redacted whatever it holds. */
export const audited = <A, E>(
  { audit }: Pick<AdminDeps, "audit">,
  by: AuditActor,
  action: AuditAction,
  change: Effect.Effect<A, E>,
  describe: (result: A) => { readonly target: string; readonly summary: Record<string, unknown> }
): Effect.Effect<A, E | StoreError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    audit.recorded(change, (result) => {
      const { summary, target } = describe(result)
      return {
        id: newAuditId(now),
        actor: by.actor,
        action,
        target,
        summary: redact(summary) as Record<string, unknown>,
        requestId: by.requestId,
        createdAt: now
      }
    }))

export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
