import { Effect, Schema } from "effect"

export class SqliteDriverError extends Schema.TaggedError<SqliteDriverError>()("SqliteDriverError", { message: Schema.String }) {}

/** node:sqlite's first release with everything the client uses without a flag (the busy `timeout`). */
export const MIN_NODE = [22, 16] as const

/**
 * Why this Node cannot open the store, if it cannot: the SQLite driver is Node's own `node:sqlite`,
 * which Node 20 lacks, and which before 22.13 needs `--experimental-sqlite` and before 22.16 has no
 * busy timeout. Checked before `node:sqlite` is imported, so the answer is this line rather than
 * Node's "No such built-in module".
 */
export const sqliteDriverProblem = (nodeVersion: string): string | undefined => {
  const [major = 0, minor = 0] = nodeVersion.split(".").map(Number)
  const [minMajor, minMinor] = MIN_NODE
  return major > minMajor || (major === minMajor && minor >= minMinor)
    ? undefined
    : `Node ${nodeVersion} is not supported: the SQLite store needs Node ${minMajor}.${minMinor} or newer (24 recommended)`
}

/** Refuses, before any database is opened, a Node without a usable `node:sqlite` (`sqliteDriverProblem`). */
export const checkSqliteDriver: Effect.Effect<void, SqliteDriverError> = Effect.suspend(() => {
  const problem = sqliteDriverProblem(process.versions.node)
  return problem === undefined ? Effect.void : Effect.fail(new SqliteDriverError({ message: problem }))
})
