/**
 * The worker process of pickup.ts's floors on the store's own queue (pickupPgFloor.ts): LISTENs on
 * the shape's channel (BENCH_PG_FLOOR_SHAPE) in BENCH_DATABASE_URL; each notification claims one job
 * in queue order (committed), tells the parent the job started, on the clock the processes share,
 * then ends it. Speaks pickupWorker.ts's messages.
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, ManagedRuntime, Queue } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { layerPgClientWithPoolUse } from "../adapters/sql/pgPool.js"
import { claimText, endingsOf, endText, MAX_ATTEMPTS } from "./lib/drainTexts.js"
import { type FromPickupWorker, sharedNow, type ToPickupWorker } from "./pickupLib.js"
import { floorChannel, type PgFloorShape } from "./pickupPgFloor.js"

const send = (message: FromPickupWorker) => process.send!(message)
process.on("message", (message: ToPickupWorker) => {
  if (message.type === "ping") return send({ type: "pong", at: sharedNow() })
  // Exiting closes the connection, so the parent can drop the database.
  process.exit(0)
})

const OWNER = `floor-${process.pid}`

/** One claim through node-postgres: `claim` takes at most one job, its start is told, then `end` ends what it took. */
const claimThenEnd = <Row extends { readonly id: string }>(
  claim: () => Promise<ReadonlyArray<Row>>,
  end: (rows: ReadonlyArray<Row>) => Promise<unknown>
) =>
async () => {
  const rows = await claim()
  for (const { id } of rows) send({ type: "seen", id, at: sharedNow() })
  if (rows.length > 0) await end(rows)
}

/** Any failure ends the process: its jobs then fail the figure as not started, with this on stderr. */
const fail = (error: unknown) => {
  process.stderr.write(`pickupPgFloorWorker: ${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
}

/** node-postgres: LISTEN on a connection of its own, claims one at a time in the order the notifications came. */
const nodePostgresWorker = async (shape: "bare" | "engine") => {
  const db = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL! })
  await db.connect()
  const listener = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL! })
  await listener.connect()
  const claimOne = shape === "bare"
    ? claimThenEnd(
      async () =>
        (await db.query<{ id: string }>({
          name: "floor_claim",
          text: `UPDATE floor_jobs SET status = 'processing', lease_until = $1
            WHERE id = (SELECT id FROM floor_jobs WHERE status = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`,
          values: [Date.now() + 300_000]
        })).rows,
      (rows) => db.query({ name: "floor_end", text: "UPDATE floor_jobs SET status = 'completed' WHERE id = $1", values: [rows[0]!.id] })
    )
    : claimThenEnd(
      async () =>
        (await db.query<{ id: string; lease_owner: string }>({ name: "floor_claim", text: claimText, values: [MAX_ATTEMPTS, 1, Date.now(), OWNER] }))
          .rows,
      (rows) => db.query({ name: "floor_end", text: endText, values: [endingsOf(rows)] })
    )
  // One claim at a time, in the order the notifications came, as the engine's one claimer takes them.
  let chain = Promise.resolve()
  listener.on("notification", () => {
    chain = chain.then(claimOne).catch(fail)
  })
  await listener.query(`LISTEN ${pg.escapeIdentifier(floorChannel(shape))}`)
}

/** Effect and the engine's client: the client's `listen` queue, one fiber taking each notification and claiming. */
const effectWorker = () =>
  new Promise<void>((listening, failed) => {
    const runtime = ManagedRuntime.make(layerPgClientWithPoolUse({ url: process.env.BENCH_DATABASE_URL! }))
    runtime.runFork(Effect.scoped(Effect.gen(function*() {
      const client = yield* PgClient.PgClient
      const sql = yield* Effect.service(SqlClient.SqlClient)
      const notifications = yield* client.listen(floorChannel("effect"))
      listening()
      const claimOne = Effect.gen(function*() {
        const rows = yield* sql.unsafe<{ id: string; lease_owner: string }>(claimText, [MAX_ATTEMPTS, 1, Date.now(), OWNER])
        for (const { id } of rows) send({ type: "seen", id, at: sharedNow() })
        if (rows.length > 0) yield* sql.unsafe(endText, [endingsOf(rows)])
      })
      yield* Effect.forever(Effect.andThen(Queue.take(notifications), claimOne))
    })).pipe(Effect.catchCause((cause) => Effect.sync(() => failed(Cause.squash(cause))))))
  })

try {
  const shape = process.env.BENCH_PG_FLOOR_SHAPE as PgFloorShape
  await (shape === "effect" ? effectWorker() : nodePostgresWorker(shape))
  send({ type: "ready" })
} catch (error) {
  send({ type: "failed", message: String(error instanceof Error ? error.stack : error) })
}
