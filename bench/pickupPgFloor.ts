/**
 * The floors of a pickup from another process on the store's own queue (pickup.ts's `pgFloor*`,
 * `engineStatements*` and `frameworkFloor*` params of pickup_remote_p50): the engine's design and
 * its own statements written bare with node-postgres, then those statements through the framework
 * and client the engine is built on. The submitting side commits the job and NOTIFYs: in the
 * engine's statement itself, as the engine's batched submits do (`engine`, `effect`), or on a
 * connection of its own after the commit, the add not waiting for it (`bare`); a worker in
 * another process (pickupPgFloorWorker.ts) LISTENs, claims one job in queue order (committed: the
 * claim that makes a second start impossible), calls the start, then ends the job.
 *
 * - `bare`: a table of three columns and one partial index of pending jobs; an INSERT, a one-row
 *   UPDATE. What the design (NOTIFY after the commit, a claim in queue order) costs at least.
 * - `engine`: the engine's database (migrated, the bench catalog, one funded account), its
 *   single-submit statement (lib/submitText.ts: charge, ledger line, spend rollup, job row,
 *   NOTIFY), its claim in queue order and its ending (lib/drainTexts.ts). What the engine's statements cost
 *   without the engine's code around them; beside the engine, what that code adds.
 * - `effect`: the same statements through what the engine is built on and nothing of the engine:
 *   Effect's runtime (one ManagedRuntime, each add one `runPromise`) and the engine's PostgreSQL
 *   client (adapters/sql/pgPool.ts: @effect/sql-pg, its pool, prepared statements), the worker's
 *   LISTEN the client's `listen` queue. The floor of any engine on this framework and client;
 *   beside `engine`, what they add to the statements.
 *
 * graphile-worker commits its NOTIFY inside `add_job`, so its worker is woken while `add_job`'s
 * answer travels, as the engine's statement does; the bare floor's NOTIFY is a statement after the
 * submit's answer, which keeps a submit's commit off the notify lock.
 */
import { randomBytes } from "node:crypto"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { layerPgClientWithPoolUse } from "../adapters/sql/pgPool.js"
import { benchCatalog, benchModel } from "./catalog.js"
import { BENCH_PROVIDER, seed, startPgEngine, submit, TABLE_PREFIX } from "./lib/engine.js"
import { type EngineSubmit, SUBMIT_TEXT, submitValues } from "./lib/submitText.js"

export type PgFloorShape = "bare" | "engine" | "effect"

/** The bare shape's table: the least a stored job needs to be claimed once in queue order. */
export const bareFloorTable = [
  "CREATE TABLE floor_jobs (id text PRIMARY KEY, status text NOT NULL, lease_until bigint)",
  "CREATE INDEX floor_jobs_pending ON floor_jobs (id) WHERE status = 'pending'"
]

/** The channel each shape's submits notify and its worker listens on (the engine's: its jobs channel). */
export const floorChannel = (shape: PgFloorShape) => (shape === "bare" ? "floor_jobs" : `${TABLE_PREFIX}jobs`)

/**
 * The engine's database for the `engine` shape: an engine migrates it and seeds the catalog and one
 * account, submits one job (whose row gives the price the engine charges), and stops; that job is
 * deleted so the queue is empty when the timing starts.
 */
const prepareEngineDatabase = async (url: string, db: pg.Client): Promise<EngineSubmit> => {
  const engine = await startPgEngine(url, { workers: 0 })
  try {
    const [caller] = await seed(engine, 1)
    await submit(engine, caller!, "probe")
    const { rows } = await db.query(
      `DELETE FROM ${TABLE_PREFIX}jobs RETURNING cost_micro_cents, version, estimated_completion_at - created_at AS estimated_ms`
    )
    if (rows.length !== 1) throw new Error(`the engine floor's probe left ${rows.length} jobs`)
    return {
      accountId: caller!.account.id,
      keyId: caller!.key.id,
      model: benchModel(BENCH_PROVIDER),
      version: benchCatalog(BENCH_PROVIDER).models[0]!.versions[0]!.versionId,
      costMicroCents: Number(rows[0].cost_micro_cents),
      estimatedMs: Number(rows[0].estimated_ms)
    }
  } finally {
    await engine.dispose()
  }
}

const newId = (prefix: string) => `${prefix}_${randomBytes(15).toString("base64url")}`

/** The submitting side of `shape` on `url`'s fresh database: each add commits the job `id`, then notifies. */
export const pgFloorSubmitter = async (url: string, shape: PgFloorShape) => {
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  const channel = floorChannel(shape)
  if (shape === "bare") {
    for (const statement of bareFloorTable) await db.query(statement)
    return nodePostgresSubmitter(url, db, channel, (id) =>
      db.query({ name: "floor_insert", text: "INSERT INTO floor_jobs (id, status) VALUES ($1, 'pending')", values: [id] }))
  }
  const of = await prepareEngineDatabase(url, db)
  let requests = 0
  const values = (id: string) =>
    submitValues({ ...of, jobId: id, requestId: `req_floor_${++requests}`, ledgerId: newId("led"), input: JSON.stringify({ prompt: id }), now: Date.now() })
  // The engine's statement NOTIFYs its claimers itself, as it commits: no NOTIFY after it.
  if (shape === "engine") {
    return nodePostgresSubmitter(url, db, undefined, async (id) => {
      const { rowCount } = await db.query({ name: "floor_submit", text: SUBMIT_TEXT, values: values(id) })
      if (rowCount !== 1) throw new Error(`the engine floor's submit of ${id} was refused`)
    })
  }
  await db.end()
  return effectSubmitter(url, values)
}

/**
 * Submits through node-postgres: `insert` on `db`, then, given a `channel`, the NOTIFY on a
 * connection of its own (as the engine's job signal notifies a submit that is not batched, after its
 * commit). An add returns with the job committed; its NOTIFY follows, one after the other (pg
 * queues them), so the split's "after the submit" holds it.
 */
const nodePostgresSubmitter = async (url: string, db: pg.Client, channel: string | undefined, insert: (id: string) => Promise<unknown>) => {
  const signal = channel === undefined ? undefined : new pg.Client({ connectionString: url })
  await signal?.connect()
  let notified: Promise<unknown> = Promise.resolve()
  return {
    add: async (id: string) => {
      await insert(id)
      if (signal !== undefined) notified = signal.query({ name: "floor_notify", text: "SELECT pg_notify($1, 'jobs')", values: [channel] })
    },
    close: async () => {
      await notified
      await signal?.end()
      await db.end()
    }
  }
}

/** Submits through Effect and the engine's client: each add one `runPromise` of the engine's statement (its NOTIFY in it). */
const effectSubmitter = async (url: string, values: (id: string) => ReadonlyArray<unknown>) => {
  const runtime = ManagedRuntime.make(layerPgClientWithPoolUse({ url }))
  const sql = await runtime.runPromise(Effect.service(SqlClient.SqlClient))
  const submitOne = (id: string) =>
    Effect.flatMap(sql.unsafe(SUBMIT_TEXT, values(id) as Array<never>), (rows) =>
      rows.length === 1 ? Effect.void : Effect.die(new Error(`the effect floor's submit of ${id} was refused`)))
  return {
    add: (id: string) => runtime.runPromise(submitOne(id)),
    close: () => runtime.dispose()
  }
}
