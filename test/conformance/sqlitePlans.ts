import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { afterAll } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { sentStatements } from "./sentStatement.js"
import { statementContext } from "./statementContext.js"

/** What the plan tests of SQLite's statements share: a store on a file of their own, and the plans as EXPLAIN QUERY PLAN gives them. */

/**
 * The store on a fresh file (`label` names its directory), beside a second connection to the same
 * file to explain statements on, as the test file's own runtime: not @effect/vitest's `layer`
 * (see sqliteListPlans.test.ts).
 */
export const sqlitePlanRuntime = (label: string) => {
  const file = join(mkdtempSync(join(tmpdir(), `genjobs-${label}-`)), "plans.db")
  const runtime = ManagedRuntime.make(Layer.merge(layerSqlite({ filename: file }), SqliteClient.layer({ filename: file })))
  afterAll(() => runtime.dispose())
  return runtime
}

/** The statements' context as the SQLite store makes it (the caller's lease clock). */
export const sqliteStatementContext = statementContext(false)

/** Every line of the plans of the statements `run` sends. */
export const plansOf = <E, R>(run: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const plans: Array<string> = []
    for (const [text, params] of yield* sentStatements(run)) {
      plans.push(...(yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((row) => row.detail))
    }
    return plans
  })
