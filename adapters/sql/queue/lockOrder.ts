import type { SqlClient, SqlError } from "effect/sql"
import { statusFilter } from "./statusFilter.js"

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

/**
 * PostgreSQL: `j` (the jobs table's alias) is a job of the record set `d` (a CTE), still
 * processing, found by its primary key. Written plainly, `j.status = 'processing'` lets the
 * planner read an index of processing jobs instead when its statistics say they are few (taken
 * while the jobs were pending, say), and that read takes the rows in the index's order, not the
 * list's: two writes of held jobs then lock rows in opposite orders and deadlock. It also reads
 * every processing job, and every entry an index keeps for jobs ended since the last vacuum.
 * `statusFilter` keeps the status a filter on the rows found by id.
 */
export const heldInPg = (sql: SqlClient.SqlClient, d: string) => listedInPg(sql, "j", d, "processing")

/**
 * PostgreSQL: row `row` (a table's alias) is one of the record set `d`, found by its primary key,
 * and still in `status` (`statusFilter`: a filter on the rows found, never an index's range), for
 * the reasons `heldInPg` gives; the webhook outcomes' batch finds its deliveries the same way.
 */
export const listedInPg = (sql: SqlClient.SqlClient, row: string, d: string, status: "processing" | "pending") =>
  sql`${sql.literal(row)}.id = ${sql(d)}.id AND ${sql.literal(row)}.id = ANY(ARRAY(SELECT id FROM ${sql(d)})) AND ${statusFilter(sql, sql.literal(`${row}.status`))} = ${sql.literal(`'${status}'`)}`
