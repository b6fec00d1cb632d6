import { Schema } from "effect"
import { randomToken } from "./ids.js"

/** What an admin write did; the target's kind is the part before the dot. */
export const AuditAction = Schema.Literals([
  "account.create",
  "account.update",
  "account.credit",
  "account.webhook_secret.rotate",
  "key.create",
  "key.update",
  "key.deactivate",
  "catalog.replace",
  "delivery.retry"
])
export type AuditAction = typeof AuditAction.Type

/**
 * An action as the log gives it back: one of `AuditAction`, or one a newer release recorded
 * (processes of two releases share the log during a rolling upgrade), shown as it was written
 * rather than failing the whole page.
 */
export const RecordedAuditAction = Schema.Union([AuditAction, Schema.String])

/** One admin write: who, what, on which record, when, and what changed (secrets left out). */
export const AuditEntry = Schema.Struct({
  id: Schema.String,
  /** The admin token's name (`admin` for ADMIN_TOKEN), or `system` for writes made from code. */
  actor: Schema.String,
  action: RecordedAuditAction,
  /** The id of the record changed: an account, a key, a webhook delivery, or `catalog`. */
  target: Schema.String,
  summary: Schema.Record(Schema.String, Schema.Unknown),
  /** The HTTP request that made the change; null for writes made from code. */
  requestId: Schema.NullOr(Schema.String),
  createdAt: Schema.Int
})
export type AuditEntry = typeof AuditEntry.Type

/** Who is making an admin write, as the audit log records it. */
export interface AuditActor {
  readonly actor: string
  readonly requestId: string | null
}

/** Writes made by the host's own code (seeding, scripts) rather than through the admin API. */
export const SYSTEM_ACTOR: AuditActor = { actor: "system", requestId: null }

const REDACTED = "[redacted]"

/** Field names whose values are credentials, whatever record they sit in. */
const SECRET_FIELD = /secret|token|password|^key$|^hash$/i

/**
 * A summary safe to keep for good: values of credential-like fields are replaced, at any
 * depth, so a summary built carelessly still never stores a secret.
 */
export const redact = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(redact)
    : value !== null && typeof value === "object"
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) ? REDACTED : redact(v)]))
    : value

/**
 * The fields a change set differently, each as `{from, to}`; fields left as they were are not
 * listed. Compared as JSON, so arrays and objects compare by content.
 */
export const changesBetween = <A extends Record<string, unknown>>(
  before: A,
  patch: Partial<A>
): Record<string, { readonly from: unknown; readonly to: unknown }> =>
  Object.fromEntries(
    Object.entries(patch)
      .filter(([k, v]) => v !== undefined && JSON.stringify(before[k]) !== JSON.stringify(v))
      .map(([k, v]) => [k, { from: before[k], to: v }])
  )

let lastMs = 0
let sequence = 0

/** Audit ids sort in creation order within a process, so entries of one millisecond list newest first. */
export const newAuditId = (now: number): string => {
  const ms = Math.max(now, lastMs)
  sequence = ms === lastMs ? sequence + 1 : 0
  lastMs = ms
  return `aud_${ms.toString(36).padStart(9, "0")}${sequence.toString(36).padStart(4, "0")}${randomToken(8)}`
}
