/**
 * The floor of a pickup from another process on the store's own queue (pickup.ts's `pgFloor*` and
 * `engineStatements*` params of pickup_remote_p50): the engine's design, and then the engine's own
 * statements, written bare with node-postgres, nothing else. The submitting side commits the job,
 * then sends NOTIFY on a connection of its own (as the engine's job signal does, after the commit;
 * the add returns without waiting for it, as the engine's submit does); a worker in another process (pickupPgFloorWorker.ts) LISTENs, claims one job in queue order
 * (committed: the claim that makes a second start impossible), calls the start, then ends the job.
 *
 * - `bare`: a table of three columns and one partial index of pending jobs; an INSERT, a one-row
 *   UPDATE. What the design (NOTIFY after the commit, a claim in queue order) costs at least.
 * - `engine`: the engine's database (migrated, the bench catalog, one funded account), its
 *   single-submit statement (lib/submitText.ts: charge, ledger line, spend rollup, job row), its
 *   claim in queue order and its ending (lib/drainTexts.ts). What the engine's statements cost
 *   without the engine's code around them; beside the engine, what that code adds.
 *
 * graphile-worker commits its NOTIFY inside `add_job`, so its worker is woken while `add_job`'s
 * answer travels; here, as in the engine, the NOTIFY is a statement after the submit's answer.
 */
import { randomBytes } from "node:crypto"
import pg from "pg"
import { benchCatalog, benchModel } from "./catalog.js"
import { BENCH_PROVIDER, seed, startPgEngine, submit, TABLE_PREFIX } from "./lib/engine.js"
import { SUBMIT_TEXT, submitValues } from "./lib/submitText.js"

export type PgFloorShape = "bare" | "engine"

/** The bare shape's table: the least a stored job needs to be claimed once in queue order. */
export const bareFloorTable = [
  "CREATE TABLE floor_jobs (id text PRIMARY KEY, status text NOT NULL, lease_until bigint)",
  "CREATE INDEX floor_jobs_pending ON floor_jobs (id) WHERE status = 'pending'"
]

/** The channel each shape's submits notify and its worker listens on (the engine's: its jobs channel). */
export const floorChannel = (shape: PgFloorShape) => (shape === "bare" ? "floor_jobs" : `${TABLE_PREFIX}jobs`)

/** What the engine's submit binds besides the job: the account, its key and the bench model's price. */
interface EngineSubmit {
  readonly accountId: string
  readonly keyId: string
  readonly model: string
  readonly version: string
  readonly costMicroCents: number
  readonly estimatedMs: number
}

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
  // The engine's job signal notifies on a connection of its own, after the submit's commit.
  const signal = new pg.Client({ connectionString: url })
  await signal.connect()
  let insert: (id: string) => Promise<unknown>
  if (shape === "bare") {
    for (const statement of bareFloorTable) await db.query(statement)
    insert = (id) => db.query({ name: "floor_insert", text: "INSERT INTO floor_jobs (id, status) VALUES ($1, 'pending')", values: [id] })
  } else {
    const of = await prepareEngineDatabase(url, db)
    let requests = 0
    insert = async (id) => {
      const { rowCount } = await db.query({
        name: "floor_submit",
        text: SUBMIT_TEXT,
        values: submitValues({
          ...of,
          jobId: id,
          requestId: `req_floor_${++requests}`,
          ledgerId: newId("led"),
          input: JSON.stringify({ prompt: id }),
          now: Date.now()
        })
      })
      if (rowCount !== 1) throw new Error(`the engine floor's submit of ${id} was refused`)
    }
  }
  const channel = floorChannel(shape)
  // As the engine's submit, an add returns with the job committed; its NOTIFY follows on its own
  // connection, one after the other (pg queues them), so the split's "after the submit" holds it.
  let notified: Promise<unknown> = Promise.resolve()
  return {
    add: async (id: string) => {
      await insert(id)
      notified = signal.query({ name: "floor_notify", text: "SELECT pg_notify($1, 'jobs')", values: [channel] })
    },
    close: async () => {
      await notified
      await signal.end()
      await db.end()
    }
  }
}
