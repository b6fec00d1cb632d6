import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Effect } from "effect"
import { makeNatsJobQueue } from "genjobs/nats"
import { makeRedisJobQueue } from "genjobs/redis"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AccountId, JobId } from "../../../src/domain/ids.js"

/** The ids as a submit of `accountId` queues them (without a weight: the lane keeps its own). */
const queuedOf = (ids: ReadonlyArray<string>, accountId: string) =>
  ids.map((id) => ({ jobId: id as JobId, accountId: accountId as AccountId }))
import { freePort, natsServerAvailable, startNatsServer } from "../../support/nats.js"
import { redisServerAvailable, startRedisServer, withRedis } from "../../support/redis.js"

export type BrokerKind = "redis" | "nats"

/** The bundled server's default table prefix: the stream NATS makes is `<prefix>jobs`; Redis makes one per account, `<prefix>jobs:<accountId>`. */
const PREFIX = "genjobs_"
const STREAM = `${PREFIX}jobs`

/** A Redis queue's streams: its accounts' lanes (and the stream of versions before them, if any). */
const redisLanes = async (client: Parameters<Parameters<typeof withRedis>[1]>[0]) => {
  const lanes: Array<string> = []
  for await (const keys of client.scanIterator({ MATCH: `${STREAM}*`, TYPE: "stream", COUNT: 1_000 })) lanes.push(...keys)
  return lanes
}

/**
 * A private broker of one fault scenario, on a port of its own: never the shared servers on
 * 6379 / 4222. It is stopped by its PID only.
 */
export interface PrivateBroker {
  readonly kind: BrokerKind
  /** The server's QUEUE_URL. */
  readonly url: string
  /** SIGKILL: the broker dies without a word (Redis, without persistence, loses its stream). */
  kill(): Promise<void>
  /** Starts it again on the same port (NATS on the same store directory, so its stream is kept); answers once it serves. */
  restart(): Promise<void>
  /**
   * Messages not yet delivered and acked. Redis: the lanes' lengths (the adapter deletes an
   * entry when it acks it). NATS: the lanes' consumers' pending and unacked messages; the stream itself
   * may keep a message acked just before a SIGKILL, whose deletion the server lost while the
   * consumer's ack floor passed it (see `stranded`).
   */
  backlog(): Promise<number>
  /** NATS: messages the stream holds though their lane's consumer has acked past them (0 for Redis). */
  stranded(): Promise<number>
  /**
   * Messages the stream stored since it was made (NATS: its last sequence; Redis: entries-added of
   * the lanes there now, each dropped once empty); a NATS duplicate within its window is not stored.
   */
  stored(): Promise<number>
  /** Publishes the ids in `accountId`'s lane as a submit does, through the engine's own adapter (`genjobs/redis`, `genjobs/nats`) with the server's table prefix. */
  publish(ids: ReadonlyArray<string>, accountId: string): Promise<void>
  /** Kills it and removes its files. */
  close(): Promise<void>
}

/** Whether the broker's binary is on PATH; under CI its absence throws (the suite must not pass by skipping). */
export const brokerAvailable = (kind: BrokerKind) => (kind === "redis" ? redisServerAvailable() : natsServerAvailable())

const natsOnce = async <A>(url: string, run: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<A>) => {
  const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 })
  try {
    return await run(await jetstreamManager(nc, { timeout: 2_000 }))
  } finally {
    await nc.close()
  }
}

/** A field of a Redis reply given as a flat [name, value, ...] list (RESP2) or a map (RESP3). */
const fieldOf = (reply: unknown, name: string): unknown => {
  if (Array.isArray(reply)) {
    const at = reply.findIndex((v) => String(v) === name)
    return at < 0 ? undefined : reply[at + 1]
  }
  return reply !== null && typeof reply === "object" ? (reply as Record<string, unknown>)[name] : undefined
}

export const startBroker = async (kind: BrokerKind): Promise<PrivateBroker> => {
  const port = await freePort()
  if (kind === "redis") {
    let server = await startRedisServer(port)
    return {
      kind,
      url: server.url,
      kill: () => server.kill("SIGKILL"),
      restart: async () => {
        server = await startRedisServer(port)
      },
      backlog: () =>
        withRedis(server.url, async (client) => {
          let total = 0
          for (const lane of await redisLanes(client)) total += await client.xLen(lane)
          return total
        }),
      stranded: async () => 0,
      stored: () =>
        withRedis(server.url, async (client) => {
          let total = 0
          for (const lane of await redisLanes(client)) total += Number(fieldOf(await client.sendCommand(["XINFO", "STREAM", lane]), "entries-added"))
          return total
        }),
      publish: (ids, accountId) =>
        Effect.runPromise(Effect.scoped(Effect.flatMap(
          makeRedisJobQueue({ url: server.url, tablePrefix: PREFIX }),
          (queue) => queue.publish(queuedOf(ids, accountId))
        ))),
      close: () => server.kill("SIGKILL")
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "genjobs-fault-nats-"))
  let server = await startNatsServer(port, dir)
  const info = () => natsOnce(server.url, (jsm) => jsm.streams.info(STREAM))
  /** Pending and unacked messages over the stream's consumers: one per account's lane (and one for the subject of older versions). */
  const consumers = () =>
    natsOnce(server.url, async (jsm) => {
      let sum = 0
      for await (const state of jsm.consumers.list(STREAM)) sum += state.num_pending + state.num_ack_pending
      return sum
    })
  return {
    kind,
    url: server.url,
    kill: () => server.kill("SIGKILL"),
    restart: async () => {
      server = await startNatsServer(port, dir)
    },
    backlog: consumers,
    stranded: async () => {
      const [stream, held] = [await info(), await consumers()]
      return stream.state.messages - held
    },
    stored: async () => (await info()).state.last_seq,
    publish: (ids, accountId) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(
        makeNatsJobQueue({ url: server.url, tablePrefix: PREFIX }),
        (queue) => queue.publish(queuedOf(ids, accountId))
      ))),
    close: async () => {
      await server.kill("SIGKILL")
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
