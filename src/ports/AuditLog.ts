import { Context, type Effect } from "effect"
import type { AuditAction, AuditEntry } from "../domain/audit.js"
import type { JobCursor } from "../domain/cursor.js"
import type { StoreError } from "../domain/errors.js"

export interface AuditQuery {
  readonly actor?: string | undefined
  readonly action?: AuditAction | undefined
  readonly target?: string | undefined
  readonly after?: JobCursor | undefined
  readonly limit: number
}

/** The admin writes, kept for good: append-only. */
export class AuditLog extends Context.Service<AuditLog, {
  /**
   * Runs the change and appends the entry made from its result. On a store with transactions
   * both commit together: a change that fails leaves no entry, and an entry that cannot be
   * written undoes the change.
   */
  readonly recorded: <A, E, R>(
    change: Effect.Effect<A, E, R>,
    entry: (result: A) => AuditEntry
  ) => Effect.Effect<A, E | StoreError, R>
  /** Newest first over (createdAt, id); up to `limit + 1` entries. */
  readonly list: (query: AuditQuery) => Effect.Effect<ReadonlyArray<AuditEntry>, StoreError>
}>()("genjobs/AuditLog") {}
