import type { SqlClient, Statement } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The time leases are kept on: the caller's `now`, or PostgreSQL's own clock in milliseconds,
 * so processes whose clocks drift apart never take over a lease early.
 */
export interface LeaseClock {
  /** The time lease expiries are compared with. */
  readonly now: (now: number) => Statement.Fragment
  /** A lease expiry `expiresAt - now` ahead of the lease clock. */
  readonly until: (now: number, expiresAt: number) => Statement.Fragment
  /** The lease clock's time `ms` ago: a bound an index can range over, as `now` is. */
  readonly ago: (now: number, ms: number) => Statement.Fragment
}

/** What every job and queue statement is written with. */
export interface JobSql {
  readonly sql: SqlClient.SqlClient
  readonly t: Tables
  readonly clock: LeaseClock
}

export const makeLeaseClock = (sql: SqlClient.SqlClient, databaseClock: boolean): LeaseClock =>
  databaseClock
    ? {
      // A scalar subquery, read once per statement: PostgreSQL can then bound an index scan with
      // it (`lease_expires_at <= $0`). Compared bare, the volatile clock is a filter on every row
      // of the index of processing jobs, dead versions of ended jobs included until vacuum: each
      // claim read them all (a drain's cost per claim grew with the jobs it had ended).
      now: () => sql`(SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint)`,
      until: (now, expiresAt) => sql`(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint + ${expiresAt - now}`,
      ago: (_now, ms) => sql`(SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint - ${ms})`
    }
    : { now: (now) => sql`${now}`, until: (_now, expiresAt) => sql`${expiresAt}`, ago: (now, ms) => sql`${now - ms}` }

/** `FOR UPDATE` on PostgreSQL; nothing on SQLite, whose one writer makes a transaction's read a lock. */
export const forUpdateOf = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
