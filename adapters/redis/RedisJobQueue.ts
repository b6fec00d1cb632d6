import { Effect, Layer, type Scope } from "effect"
import { clampWeight } from "../../src/domain/fairShare.js"
import { QueueError } from "../../src/domain/errors.js"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"
import { JobQueue, type QueuedJob } from "../../src/ports/JobQueue.js"
import { call, connected, makeClient } from "./connection.js"
import { type Lanes, makeMember } from "./member.js"
import { runPublish } from "./scripts.js"

export interface RedisJobQueueOptions {
  /** `redis[s]://[[user][:password]@]host[:port][/db]`; a `Redacted` keeps it out of logs and traces. */
  readonly url: Secret
  /** Starts every key the queue makes in Redis, as the stores' tables do; `"genjobs_"` by default. */
  readonly tablePrefix?: string | undefined
}

/** The stores' rule for table prefixes, its refusal as a QueueError. */
const checkPrefix = (prefix: string): Effect.Effect<string, QueueError> =>
  Effect.mapError(checkTablePrefix(prefix), (error) => new QueueError({ message: error.message }))

/**
 * The queue as Redis streams, one lane per account: `<prefix>jobs:<accountId>`, each read by its
 * consumer group `<prefix>workers`, the lanes listed with their weights in the hash `<prefix>lanes`.
 * `publish` adds an entry (field `job`) per job to its lane, making the lane and its group together
 * when it is new, and rings the bell `<prefix>lanes:bell` (a stream of one entry) that waiting
 * members block on. A member's receive is one script: it takes each lane's share of the receive
 * (entries whose holder stayed silent for `visibilityMs` first, XAUTOCLAIM, then new ones,
 * XREADGROUP) into the member's heads; the engine's `fairPick` gives out up to `max` of them in
 * weighted round robin, first in, first out within a lane. Heads not given out stay the member's:
 * kept (idle time reset) by the next receive, or handed back (made reclaimable at once) when no
 * receive comes for them within a second (its runners all busy), or by the next extend. `extend` resets the idle time of the entries the member still
 * holds (XPENDING, then XCLAIM, in one script); `ack` acknowledges and deletes them, and drops a
 * lane left empty, so the streams hold only jobs not yet done and no idle lane stays.
 *
 * The stream `<prefix>jobs` of versions before the lanes is read as one more lane (weight 1) while
 * it exists: a backlog there when a deployment upgrades is drained, not lost.
 *
 * The scripts name the lanes' keys themselves: the queue needs one Redis, not a Redis Cluster. A
 * Redis that lost its data (restarted without persistence) lost the lanes with the registry: the
 * store keeps the truth, the engine's relay publishes again, and the publishes make the lanes again.
 *
 * Every member blocks over a connection of its own (XREAD BLOCK holds its connection); the rest
 * goes over one shared connection. Commands fail at once with a QueueError while Redis is
 * unreachable, and the connections reconnect in the background.
 */
export const makeRedisJobQueue = (
  options: RedisJobQueueOptions
): Effect.Effect<JobQueue["Service"], QueueError, Scope.Scope> =>
  Effect.gen(function*() {
    const prefix = yield* checkPrefix(options.tablePrefix ?? DEFAULT_TABLE_PREFIX)
    const url = secretValue(options.url)
    const lanes: Lanes = {
      client: yield* connected(() => makeClient(url), "queue"),
      base: `${prefix}jobs:`,
      legacy: `${prefix}jobs`,
      registry: `${prefix}lanes`,
      bell: `${prefix}lanes:bell`,
      group: `${prefix}workers`
    }

    // One script per publish: its commands run in one round trip, and fail at once while the
    // connection is down. Not MULTI: node-redis queues a MULTI for the next reconnection even
    // without an offline queue (measured: submits waited 1.5 s while Redis was down).
    const publish = (jobs: ReadonlyArray<QueuedJob>) =>
      jobs.length === 0 ? Effect.void : call("publish", () =>
        runPublish(
          lanes.client,
          [lanes.registry, lanes.bell],
          [lanes.base, lanes.group, ...jobs.flatMap((job) => [job.accountId, job.weight === undefined ? "" : String(clampWeight(job.weight)), job.jobId])]
        )).pipe(Effect.asVoid)

    const consume = (member: { readonly name: string; readonly visibilityMs: number }) => makeMember(lanes, member)

    const ping = call("ping", () => lanes.client.ping()).pipe(Effect.asVoid)

    return JobQueue.of({ publish, consume, ping })
  })

export const layerRedisJobQueue = (options: RedisJobQueueOptions) => Layer.effect(JobQueue, makeRedisJobQueue(options))
