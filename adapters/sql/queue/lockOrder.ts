import type { SqlError } from "effect/sql"

/**
 * A copy of `rows` by id, in code unit order. PostgreSQL's multi-row writes of held jobs lock
 * their rows in the order of their JSON list (their plans probe the jobs entry by entry): two
 * lists in the same order never take two rows in opposite orders, so never deadlock each other.
 */
export const byId = <Row extends { readonly id: string }>(rows: ReadonlyArray<Row>): ReadonlyArray<Row> =>
  [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

/** PostgreSQL aborted the statement to break a deadlock: nothing of it stays, and it may be run again. */
export const isDeadlock = (error: SqlError.SqlError): boolean => error.reason._tag === "DeadlockError"

/** How many times a write aborted by deadlocks is tried again before its error stands. */
export const DEADLOCK_RETRIES = 3
