/**
 * The worker process of pickup.ts's store floor (pickupFloor.ts): blocks on the broker's receive
 * (BENCH_FLOOR_BROKER: a Redis list's BLPOP, or a bare JetStream consumer), claims the job's row
 * by id in BENCH_DATABASE_URL (one UPDATE from pending, committed), then tells the parent the job
 * started, on the clock the processes share. Speaks pickupWorker.ts's messages.
 */
import { createClient } from "@redis/client"
import pg from "pg"
import { type FloorBroker, floorName } from "./pickupFloor.js"
import { type FromPickupWorker, sharedNow, startBareJetStream, type ToPickupWorker } from "./pickupLib.js"

const send = (message: FromPickupWorker) => process.send!(message)
process.on("message", (message: ToPickupWorker) => {
  if (message.type === "ping") return send({ type: "pong", at: sharedNow() })
  // Exiting closes the blocked receive and the connection, so the parent can drop the database.
  process.exit(0)
})

try {
  const broker = process.env.BENCH_FLOOR_BROKER as FloorBroker
  const prefix = process.env.BENCH_PICKUP_PREFIX!
  const db = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL! })
  await db.connect()
  const claim = async (id: string) => {
    const { rowCount } = await db.query({
      name: "floor_claim",
      text: "UPDATE floor_jobs SET status = 'processing', lease_until = $2 WHERE id = $1 AND status = 'pending' RETURNING id",
      values: [id, Date.now() + 60_000]
    })
    if (rowCount === 1) send({ type: "seen", id, at: sharedNow() })
  }
  if (broker === "redis") {
    const redis = createClient({ url: process.env.BENCH_FLOOR_BROKER_URL! })
    await redis.connect()
    void (async () => {
      for (;;) {
        const popped = await redis.blPop(floorName(prefix), 0)
        if (popped !== null) await claim(popped.element)
      }
    })()
  } else {
    // The bare consumer's handler calls `seen` at once; here the claim comes first, in order.
    let chain = Promise.resolve()
    await startBareJetStream(process.env.BENCH_FLOOR_BROKER_URL!, prefix, (id) => {
      chain = chain.then(() => claim(id))
    }, floorName(prefix))
  }
  send({ type: "ready" })
} catch (error) {
  send({ type: "failed", message: String(error instanceof Error ? error.stack : error) })
}
