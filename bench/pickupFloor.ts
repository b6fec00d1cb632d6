/**
 * The floor of a broker pickup for a job kept in PostgreSQL (pickup.ts's `storeFloor*` params of
 * pickup_redis_p50 and pickup_nats_vs_jetstream_p50): what any queue that stores its jobs in the
 * database and starts each at most once must do, written bare with node-postgres and the broker's
 * client, nothing else. The submit commits the job's row (one INSERT, its commit flushed) and then
 * publishes its id; a worker in another process (pickupFloorWorker.ts) blocks on the broker's
 * receive, claims the row by id (one UPDATE from pending, its commit flushed: the claim that makes
 * a second start impossible) and calls the start. BullMQ and a bare JetStream consumer make
 * neither commit, so this says how much of 1.3x their p50 the two commits leave.
 */
import { jetstream } from "@nats-io/jetstream"
import { connect as natsConnect } from "@nats-io/transport-node"
import { createClient } from "@redis/client"
import pg from "pg"

export type FloorBroker = "redis" | "nats"

/** The job's table: the least a stored job needs to be claimed once. */
export const floorTable = `CREATE TABLE floor_jobs (id text PRIMARY KEY, status text NOT NULL, lease_until bigint)`

/** Where `prefix`'s floor publishes and its worker receives: a Redis list, or a work-queue stream's subject. */
export const floorName = (prefix: string) => `${prefix}floor`

/** The submitting side: commits each job's row, then publishes its id. */
export const floorSubmitter = async (url: string, broker: FloorBroker, brokerUrl: string, prefix: string) => {
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  await db.query(floorTable)
  const insert = (id: string) => db.query({ name: "floor_insert", text: "INSERT INTO floor_jobs (id, status) VALUES ($1, 'pending')", values: [id] })
  if (broker === "redis") {
    const redis = createClient({ url: brokerUrl })
    await redis.connect()
    return {
      add: async (id: string) => {
        await insert(id)
        await redis.lPush(floorName(prefix), id)
      },
      close: async () => {
        redis.destroy()
        await db.end()
      }
    }
  }
  const nc = await natsConnect({ servers: [brokerUrl] })
  const js = jetstream(nc)
  return {
    add: async (id: string) => {
      await insert(id)
      await js.publish(floorName(prefix), id, { msgID: id })
    },
    close: async () => {
      await nc.close()
      await db.end()
    }
  }
}
