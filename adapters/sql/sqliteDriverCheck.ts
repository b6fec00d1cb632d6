import { Data, Effect } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

export class SqliteDriverError extends Data.TaggedError("SqliteDriverError")<{ readonly message: string }> {}

/**
 * Why this Node and better-sqlite3 must not run together, if they must not: better-sqlite3 12
 * (what @effect/sql-sqlite-node 0.53 asks for) on Node 24, where its statements' finalizers trip
 * `Assertion failed: (env) != nullptr` during a garbage collection and the process dies with
 * SIGABRT, minutes into serving. better-sqlite3 13 is fixed, but needs Node 22: on Node 20 it
 * crashes with a segmentation fault.
 */
export const sqliteDriverProblem = (nodeVersion: string, driverVersion: string): string | undefined => {
  const node = Number(nodeVersion.split(".")[0])
  const driver = Number(driverVersion.split(".")[0])
  // 13 is built on Node-API for Node 22 and up; on Node 20 it crashes the process at once.
  if (node < 22 && driver >= 13) return `Node ${nodeVersion} is not supported: genjobs needs Node 22 or newer (24 recommended)`
  if (node >= 24 && driver < 13) {
    return `better-sqlite3 ${driverVersion} aborts Node ${nodeVersion} during garbage collection; ` +
      `add "overrides": {"better-sqlite3": "^13.2.0"} to your package.json and run npm install again`
  }
  return undefined
}

/** The version of the better-sqlite3 that @effect/sql-sqlite-node loads (not necessarily the host's own). */
const driverVersion = (): string => {
  const fromClient = createRequire(createRequire(import.meta.url).resolve("@effect/sql-sqlite-node"))
  // better-sqlite3 13 does not export its package.json; its main file sits in lib/.
  const packageJson = join(dirname(fromClient.resolve("better-sqlite3")), "..", "package.json")
  return String(JSON.parse(readFileSync(packageJson, "utf8")).version)
}

/** Refuses, before any database is opened, a driver that would abort this process (`sqliteDriverProblem`). */
export const checkSqliteDriver: Effect.Effect<void, SqliteDriverError> = Effect.suspend(() => {
  const problem = sqliteDriverProblem(process.versions.node, driverVersion())
  return problem === undefined ? Effect.void : Effect.fail(new SqliteDriverError({ message: problem }))
})
