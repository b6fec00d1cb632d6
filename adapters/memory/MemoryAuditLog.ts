import { Effect } from "effect"
import type { AuditEntry } from "../../src/domain/audit.js"
import { isAfterCursor } from "../../src/domain/cursor.js"
import type { AuditLog } from "../../src/ports/AuditLog.js"

/** The audit log in memory. Memory has no transactions: the entry is appended once the change succeeded. */
export const memoryAuditLog = (): AuditLog["Service"] => {
  const entries: Array<AuditEntry> = []
  return {
    recorded: (change, entry) => Effect.tap(change, (result) => Effect.sync(() => void entries.push(entry(result)))),
    list: ({ action, actor, after, limit, target }) =>
      Effect.sync(() =>
        entries
          .filter((e) =>
            (actor === undefined || e.actor === actor) &&
            (action === undefined || e.action === action) &&
            (target === undefined || e.target === target) &&
            (after === undefined || isAfterCursor(e, after))
          )
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
          .slice(0, limit + 1)
      )
  }
}
