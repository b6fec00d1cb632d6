import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"

/** The server the tests use; CI provides it at this address. */
export const ADMIN_URL = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/**
 * Every test database's name starts with this (`TEST_DB_PREFIX`), so runs on one server can be
 * told apart and cleaned up. Letters, digits and `_` only: it goes into LIKE patterns.
 */
export const TEST_DB_PREFIX = process.env["TEST_DB_PREFIX"] ?? "genjobs_t_"
if (!/^[a-z_][a-z0-9_]*$/i.test(TEST_DB_PREFIX)) {
  throw new Error(`TEST_DB_PREFIX must be letters, digits and "_", starting with a letter or "_": ${JSON.stringify(TEST_DB_PREFIX)}`)
}

/**
 * This run's own databases start with this; the global setup sets GENJOBS_TEST_RUN before the
 * test processes start, so teardown drops only what this run made and never another run's.
 */
const runPrefix = () => `${TEST_DB_PREFIX}${process.env["GENJOBS_TEST_RUN"] ?? "local"}_`

const onAdmin = <A>(run: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>, maxConnections = 1) =>
  Effect.runPromise(
    Effect.flatMap(PgClient.PgClient, run).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(ADMIN_URL), maxConnections }))
    )
  )

const urlOf = (database: string) => {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${database}`
  return url.toString()
}

/**
 * A new, empty database for one test. Undefined when PostgreSQL is not reachable, except under
 * CI, where a missing server is an error: the PostgreSQL suites must not pass by skipping.
 */
export const freshPostgresUrl = async (): Promise<string | undefined> => {
  const name = `${runPrefix()}${randomBytes(6).toString("hex")}`
  try {
    await onAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`)
    return urlOf(name)
  } catch (error) {
    if (process.env["CI"]) throw new Error(`PostgreSQL is required in CI (${ADMIN_URL}): ${String(error)}`)
    return undefined
  }
}

/** Whether PostgreSQL answers, creating nothing; under CI a missing server is an error, as for freshPostgresUrl. */
export const postgresAvailable = async (): Promise<boolean> => {
  try {
    await onAdmin((sql) => sql`SELECT 1`)
    return true
  } catch (error) {
    if (process.env["CI"]) throw new Error(`PostgreSQL is required in CI (${ADMIN_URL}): ${String(error)}`)
    return false
  }
}

const DROPS_AT_ONCE = 8

/** Drops the databases this run made; run once after all suites. */
export const dropTestDatabases = () =>
  onAdmin((sql) =>
    Effect.gen(function*() {
      // "_" is a LIKE wildcard: match the run's prefix literally.
      const pattern = `${runPrefix().replace(/_/g, "\\_")}%`
      const rows = yield* sql<{ datname: string }>`SELECT datname FROM pg_database WHERE datname LIKE ${pattern}`
      // Each drop waits for a checkpoint; drops waiting at once share one.
      yield* Effect.forEach(rows, (row) => sql`DROP DATABASE IF EXISTS ${sql(row.datname)} WITH (FORCE)`, {
        concurrency: DROPS_AT_ONCE,
        discard: true
      })
    }), DROPS_AT_ONCE)

/**
 * Whether `connections` LISTEN connections of this database are subscribed: the last statement of
 * each was its last LISTEN (the followers' announcements, after the job-events channel), so a
 * NOTIFY sent now reaches them.
 */
export const listening = (connections: number) =>
  Effect.flatMap(PgClient.PgClient, (sql) =>
    sql<{ subscribed: number }>`SELECT count(*)::int AS subscribed FROM pg_stat_activity
      WHERE application_name = 'genjobs listener' AND datname = current_database()
        AND state = 'idle' AND query LIKE 'LISTEN %job_follow%'`).pipe(
    Effect.map(([row]) => row!.subscribed >= connections)
  )
