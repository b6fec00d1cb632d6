/**
 * sql_client_floor: what one statement costs this process's CPU through the store's SQL client
 * (@effect/sql-pg sessions in the engine's own pool, adapters/sql/pgPool.ts, statement bound
 * armed as a migrated store has it), beside node-postgres (`pg.Pool`) running the same
 * statements. process.cpuUsage (user + system) over BENCH_SQL_FLOOR_STATEMENTS statements (20,000)
 * run by 8 callers at once on 8 connections, after a warm-up, for `SELECT 1`, an INSERT of one
 * row of 20 columns (built with `sql.insert`, as the stores write rows) and the same INSERT
 * RETURNING three columns. Clients: the engine's as configured; the same with spans off
 * (References.TracerEnabled false); pg unnamed (parsed each time) and pg named (prepared once a
 * connection, as the engine's client prepares). BENCH_SQL_FLOOR_CLIENTS=effect,... picks some
 * (a CPU profile of one client alone: NODE_OPTIONS=--cpu-prof). One database of its own, dropped.
 */
import { Context, Effect, Exit, Layer, References, Scope } from "effect"
import type { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import pg from "pg"
import { armStoreTimeout, layerPgClientWithPoolUse } from "../adapters/sql/pgPool.js"
import { withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"

const STATEMENTS = Number(process.env.BENCH_SQL_FLOOR_STATEMENTS ?? 20_000)
const WARMUP = Math.min(2_000, STATEMENTS)
const CALLERS = 8
const CLIENTS = (process.env.BENCH_SQL_FLOOR_CLIENTS ?? "effect,effect_untraced,pg,pg_prepared").split(",").map((s) => s.trim())

const COLUMNS = 20
const columnNames = Array.from({ length: COLUMNS }, (_, i) => `c${i}`)
/** A row like a job's: ids and names, counts, amounts, flags, times, a null. */
const rowOf = (i: number): Record<string, string | number | boolean | null> => {
  const row: Record<string, string | number | boolean | null> = {}
  for (let c = 0; c < COLUMNS; c++) {
    row[`c${c}`] = c % 5 === 0 ? `r${i}_${c}` : c % 5 === 1 ? i + c : c % 5 === 2 ? c % 2 === 0 : c % 5 === 3 ? Date.now() : null
  }
  return row
}
const columnTypes = (c: number) => ["text", "bigint", "boolean", "bigint", "text"][c % 5]
const TABLE = "floor_rows"
const insertText = `INSERT INTO ${TABLE} (${columnNames.join(",")}) VALUES (${columnNames.map((_, i) => `$${i + 1}`).join(",")})`
const RETURNING = " RETURNING c0, c1, c3"

type Kind = "select" | "insert" | "insert_returning"
const KINDS: ReadonlyArray<Kind> = ["select", "insert", "insert_returning"]

/** Runs `one(i)` for i in [from, from + n) on CALLERS callers at once; resolves when all are done. */
const runCallers = async (from: number, n: number, one: (i: number) => Promise<unknown>) => {
  let next = from
  const end = from + n
  await Promise.all(Array.from({ length: CALLERS }, async () => {
    while (next < end) await one(next++)
  }))
}

/** CPU of this process per statement, in µs, for `n` statements after a warm-up. */
const measure = async (run: (from: number, n: number) => Promise<void>) => {
  await run(0, WARMUP)
  const cpu = process.cpuUsage()
  const start = performance.now()
  await run(WARMUP, STATEMENTS)
  const used = process.cpuUsage(cpu)
  return { cpuUs: (used.user + used.system) / STATEMENTS, wallMs: performance.now() - start }
}

const effectRunner = (sql: SqlClient.SqlClient, kind: Kind, traced: boolean) => {
  const statement = (i: number) =>
    kind === "select"
      ? sql`SELECT 1`
      : kind === "insert"
      ? sql`INSERT INTO ${sql(TABLE)} ${sql.insert(rowOf(i))}`
      : sql`INSERT INTO ${sql(TABLE)} ${sql.insert(rowOf(i))} RETURNING c0, c1, c3`
  return (from: number, n: number) => {
    let next = from
    const end = from + n
    const caller = Effect.whileLoop({ while: () => next < end, body: () => statement(next++), step: () => undefined })
    const all = Effect.forEach(Array.from({ length: CALLERS }), () => caller, { concurrency: CALLERS, discard: true })
    return Effect.runPromise(traced ? all : Effect.provideService(all, References.TracerEnabled, false))
  }
}

const pgRunner = (pool: pg.Pool, kind: Kind, prepared: boolean) => {
  const text = kind === "select" ? "SELECT 1" : kind === "insert" ? insertText : insertText + RETURNING
  const name = prepared ? `floor_${kind}` : undefined
  return (from: number, n: number) =>
    runCallers(from, n, (i) => {
      const row = rowOf(i)
      return pool.query({ text, ...(name === undefined ? {} : { name }), values: kind === "select" ? [] : columnNames.map((c) => row[c]) })
    })
}

export const sqlClientFloor = async (): Promise<void> => {
  await withDatabase("sqlfloor", async (url) => {
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      await admin.query(`CREATE TABLE ${TABLE} (id bigserial PRIMARY KEY, ${columnNames.map((c, i) => `${c} ${columnTypes(i)}`).join(", ")})`)
      const scope = Effect.runSync(Scope.make())
      const context = await Effect.runPromise(Layer.buildWithScope(layerPgClientWithPoolUse({ url, maxConnections: CALLERS }), scope))
      const sql = Context.get(context, PgClient.PgClient)
      await Effect.runPromise(Effect.provide(armStoreTimeout, context))
      const pool = new pg.Pool({ connectionString: url, max: CALLERS })
      const runners: Record<string, (kind: Kind) => (from: number, n: number) => Promise<void>> = {
        effect: (kind) => effectRunner(sql, kind, true),
        effect_untraced: (kind) => effectRunner(sql, kind, false),
        pg: (kind) => pgRunner(pool, kind, false),
        pg_prepared: (kind) => pgRunner(pool, kind, true)
      }
      try {
        for (const kind of KINDS) {
          const figures: Record<string, { cpuUs: number; wallMs: number }> = {}
          for (const client of CLIENTS) {
            await admin.query(`TRUNCATE ${TABLE}`)
            figures[client] = await measure(runners[client]!(kind))
            log(`${kind} ${client}: ${figures[client]!.cpuUs.toFixed(1)} µs CPU/statement, ${Math.round(figures[client]!.wallMs)} ms`)
          }
          const reference = figures.pg_prepared ?? figures.pg
          for (const client of CLIENTS.filter((c) => c.startsWith("effect"))) {
            emit({
              figure: `sql_client_floor_${kind}_${client}`,
              engine: figures[client]!.cpuUs,
              reference: reference?.cpuUs ?? null,
              unit: "µs CPU/statement",
              better: "lower",
              referenceIs: figures.pg_prepared ? "pg.Pool, named (prepared) statement, same run" : "pg.Pool, same run",
              params: {
                statements: STATEMENTS,
                callers: CALLERS,
                ...Object.fromEntries(Object.entries(figures).map(([c, f]) => [`${c}CpuUs`, Math.round(f.cpuUs * 10) / 10]))
              }
            })
          }
        }
      } finally {
        await pool.end()
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    } finally {
      await admin.end()
    }
  })
}
