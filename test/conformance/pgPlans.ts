import { PgClient } from "@effect/sql-pg"
import { afterAll, beforeAll } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { statementContext } from "./statementContext.js"
import { T0 } from "./fixtures.js"

/** What the plan tests of PostgreSQL's statements share: their database, and the plans as EXPLAIN gives them. */

/** The one account `acc_00001` the plan tests' jobs belong to. */
export const oneAccount = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`INSERT INTO genjobs_accounts (id, name, balance_micro_cents, max_concurrent_jobs, segments, allowed_models,
      discounts, webhook_secret, created_at)
    VALUES ('acc_00001', 'account', 0, 10, '[]', '[]', '[]', 'whsec_x', ${T0})`)

/** The statements' context as the PostgreSQL store makes it (the database's lease clock). */
export const pgStatementContext = statementContext(true)

/** A parameter as EXECUTE takes it, a SQL literal. */
const literal = (value: unknown) => typeof value === "number" ? String(value) : `'${String(value).replace(/'/g, "''")}'`

export type PlanNode = {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly Alias?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly Filter?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}
export const nodes = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodes)]

/** One line a node, for the failure message. */
export const render = (plan: PlanNode) =>
  nodes(plan).map((n) =>
    [n["Node Type"], n["Relation Name"], n["Index Name"], n["Index Cond"], n.Filter && `Filter ${n.Filter}`].filter(Boolean).join(" ")
  ).join("\n")

/**
 * The plan a prepared statement runs with: its first (planned for its parameters), and the one
 * it settles on after PostgreSQL's five custom plans, when it may switch to a generic plan
 * (`plan_cache_mode = auto`, the server's default). The engine's pool prepares every statement
 * it runs twice, so the second is what a busy store runs with. A write's EXECUTEs write.
 */
export const planOf = ([text, params]: readonly [string, ReadonlyArray<unknown>], run: "first" | "settled") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      const execute = `EXECUTE planned(${params.map(literal).join(", ")})`
      yield* sql.unsafe(`SET LOCAL plan_cache_mode = auto`)
      yield* sql.unsafe(`PREPARE planned AS ${text}`)
      if (run === "settled") for (let i = 0; i < 6; i++) yield* sql.unsafe(execute)
      const [row] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${execute}`)
      yield* sql.unsafe(`DEALLOCATE planned`)
      return row!["QUERY PLAN"][0]!.Plan
    })))

/**
 * The stores on a fresh database seeded once by `seed`, beside a client of their own, as the
 * file's own runtime: not @effect/vitest's `layer`, which assigns its runtime to the shared `it`
 * that later files of the same worker (isolate: false) would then run under.
 */
export const planRuntime = <E>(seed: Effect.Effect<void, E, SqlClient.SqlClient>) => {
  const stores = Layer.unwrap(
    Effect.promise(freshPostgresUrl).pipe(Effect.map((url) =>
      Layer.merge(layerPostgres({ url: Redacted.make(url!) }), PgClient.layer({ url: Redacted.make(url!) }))
    ))
  ).pipe(Layer.tap((context) => Effect.provide(seed, context)))
  const runtime = ManagedRuntime.make(stores)
  beforeAll(() => runtime.context(), 120_000)
  afterAll(() => runtime.dispose())
  return runtime
}
