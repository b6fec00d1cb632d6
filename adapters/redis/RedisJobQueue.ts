import { createClient, ErrorReply } from "@redis/client"
import { Duration, Effect, Layer, type Scope } from "effect"
import { createHash } from "node:crypto"
import { fairPick, type FairLane, type FairTurn, laneRoom } from "../../src/domain/fairPick.js"
import { clampWeight } from "../../src/domain/fairShare.js"
import { QueueError } from "../../src/domain/errors.js"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueConsumer, type QueueDelivery, type QueuedJob } from "../../src/ports/JobQueue.js"

export interface RedisJobQueueOptions {
  /** `redis[s]://[[user][:password]@]host[:port][/db]`; a `Redacted` keeps it out of logs and traces. */
  readonly url: Secret
  /** Starts every key the queue makes in Redis, as the stores' tables do; `"genjobs_"` by default. */
  readonly tablePrefix?: string | undefined
}


/** The stores' rule for table prefixes, its refusal as a QueueError. */
const checkPrefix = (prefix: string): Effect.Effect<string, QueueError> =>
  Effect.mapError(checkTablePrefix(prefix), (error) => new QueueError({ message: error.message }))

/** How long connecting (at the start, and for each consumer) may take before it fails. */
const CONNECT_TIMEOUT_MS = 5_000
/**
 * How long a command may go unanswered before it fails (a blocking read: past its wait). Commands
 * on a dropped connection fail at once; this bounds the rarer silent one (a peer gone without a
 * reset), which TCP keep-alive only notices much later.
 */
const COMMAND_TIMEOUT_MS = 5_000

/** Reconnects after about 50, 100, 200 ... ms, never waiting more than 2 s between attempts. */
const reconnectStrategy = (retries: number) => Math.min(50 * 2 ** retries, 2_000) + Math.floor(Math.random() * 50)

const makeClient = (url: string) =>
  createClient({
    url,
    // Commands issued while the connection is down fail at once instead of waiting for it.
    disableOfflineQueue: true,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy }
  })

type Client = ReturnType<typeof makeClient>

const reasonOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/**
 * The command's promise as an effect failing with a QueueError naming `operation`, within
 * `timeoutMs`: one timer beside the promise, not a race of two fibers (Effect.timeout), since
 * every receive and ack goes through here.
 */
const call = <A>(operation: string, run: () => Promise<A>, timeoutMs = COMMAND_TIMEOUT_MS) =>
  Effect.callback<A, QueueError>((resume) => {
    let settled = false
    const settle = (effect: Effect.Effect<A, QueueError>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(effect)
    }
    const failed = (cause: unknown) =>
      settle(Effect.fail(new QueueError({ message: `Redis queue: ${operation} failed: ${reasonOf(cause)}`, cause })))
    const timer = setTimeout(
      () => settle(Effect.fail(new QueueError({ message: `Redis queue: ${operation} got no answer within ${timeoutMs} ms` }))),
      timeoutMs
    )
    try {
      run().then((value) => settle(Effect.succeed(value)), failed)
    } catch (cause) {
      failed(cause)
    }
    // Interrupted: the command goes on in Redis; its answer is dropped.
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
    })
  })

/**
 * A connected client, destroyed when the scope closes. It listens to its "error" events (node-redis
 * throws them otherwise) and logs once when its connection drops and once when it is back; it
 * reconnects in the background meanwhile, while its commands fail at once.
 */
const connected = (make: () => Client, role: string) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const log = (effect: Effect.Effect<void>) => void Effect.runForkWith(context)(effect)
    let lastError: unknown = undefined
    const client = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const client = make()
          let down = false
          let closed = false
          client.on("error", (error: unknown) => {
            lastError = error
            if (down || closed) return
            down = true
            log(Effect.logWarning(`Redis queue: ${role} connection failed (${reasonOf(error)}); reconnecting`))
          })
          client.on("ready", () => {
            if (!down || closed) return
            down = false
            log(Effect.logInfo(`Redis queue: ${role} connection restored`))
          })
          client.on("end", () => {
            closed = true
          })
          return client
        },
        // The URL's parser names the URL in its errors: keep it (and its password) out.
        catch: () => new QueueError({ message: "Redis queue: the url is not a valid redis:// or rediss:// URL" })
      }),
      (client) => Effect.sync(() => client.destroy())
    )
    yield* Effect.tryPromise({
      try: () => client.connect(),
      catch: (cause) => new QueueError({ message: `Redis queue: connect (${role}) failed: ${reasonOf(cause)}`, cause })
    }).pipe(
      // The client retries a refused connection until it is closed: give up at the deadline.
      Effect.timeoutOrElse({
        duration: Duration.millis(CONNECT_TIMEOUT_MS),
        orElse: () =>
          Effect.fail(
            new QueueError({
              message: `Redis queue: connect (${role}) failed within ${CONNECT_TIMEOUT_MS} ms` +
                (lastError === undefined ? "" : `: ${reasonOf(lastError)}`),
              cause: lastError
            })
          )
      })
    )
    return client
  })

/**
 * Adds each job (ARGV[3..], as account, weight or "", job id) to its account's lane
 * ARGV[1]..account, making the lane and its group ARGV[2] together when it is new, and sets the
 * lane's weight in the registry KEYS[1] (kept, or 1 for a new lane, when none is given); then rings
 * the bell KEYS[2] once, waking the members that wait. One script: a lane never exists without its
 * group, nor in the registry without its stream.
 */
const PUBLISH_SCRIPT = `for i = 3, #ARGV, 3 do
  local key = ARGV[1] .. ARGV[i]
  if redis.call('EXISTS', key) == 0 then
    redis.call('XGROUP', 'CREATE', key, ARGV[2], '0', 'MKSTREAM')
  end
  redis.call('XADD', key, '*', 'job', ARGV[i + 2])
  if ARGV[i + 1] == '' then
    redis.call('HSETNX', KEYS[1], ARGV[i], 1)
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '1', '*', 'n', '1')
return 0`

/**
 * One receive's round trip. Keeps the heads ARGV[7..6+2*ARGV[6]] (account, entry id) the member
 * ARGV[3] still holds (an idle time reset, as EXTEND_SCRIPT does); then, for every lane of the
 * registry KEYS[1] and the stream of older versions KEYS[3] (account ""), takes up to its room
 * (the triples after the heads: account, room, reclaim cursor; ARGV[5] for a lane not named):
 * entries whose holder let ARGV[4] ms pass first (XAUTOCLAIM), then new ones (XREADGROUP).
 * Answers { heads kept, the registry, per lane: account, next cursor, count, then id and job of
 * each entry, the bell's last id }.
 */
const TAKE_SCRIPT = `local base, group, member, visibility = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local keyOf = function(account)
  if account == '' then return KEYS[3] end
  return base .. account
end
local kept = {}
local at = 7
for i = 1, tonumber(ARGV[6]) do
  local account, id = ARGV[at], ARGV[at + 1]
  at = at + 2
  local key = keyOf(account)
  local mine = redis.pcall('XPENDING', key, group, id, id, 1, member)
  if type(mine) == 'table' and mine.err == nil and #mine == 1 then
    redis.call('XCLAIM', key, group, member, 0, id, 'JUSTID')
    kept[#kept + 1] = account
    kept[#kept + 1] = id
  end
end
local rooms, cursors = {}, {}
while at + 2 <= #ARGV do
  rooms[ARGV[at]] = tonumber(ARGV[at + 1])
  cursors[ARGV[at]] = ARGV[at + 2]
  at = at + 3
end
local registry = redis.call('HGETALL', KEYS[1])
local accounts = {}
for i = 1, #registry, 2 do accounts[#accounts + 1] = registry[i] end
if redis.call('EXISTS', KEYS[3]) == 1 then accounts[#accounts + 1] = '' end
local lanes = {}
local jobOf = function(fields)
  if type(fields) ~= 'table' then return '' end
  for f = 1, #fields, 2 do
    if fields[f] == 'job' then return fields[f + 1] end
  end
  return ''
end
for _, account in ipairs(accounts) do
  local room = rooms[account] or tonumber(ARGV[5])
  local key = keyOf(account)
  local cursor = cursors[account] or '0-0'
  local taken = {}
  if room > 0 then
    local reclaimed = redis.pcall('XAUTOCLAIM', key, group, member, visibility, cursor, 'COUNT', room)
    if type(reclaimed) == 'table' and reclaimed.err == nil then
      cursor = reclaimed[1]
      for _, entry in ipairs(reclaimed[2]) do
        if type(entry) == 'table' then
          taken[#taken + 1] = entry[1]
          taken[#taken + 1] = jobOf(entry[2])
        end
      end
    end
    local rest = room - #taken / 2
    if rest > 0 then
      local fresh = redis.pcall('XREADGROUP', 'GROUP', group, member, 'COUNT', rest, 'STREAMS', key, '>')
      if type(fresh) == 'table' and fresh.err == nil and fresh[1] then
        for _, entry in ipairs(fresh[1][2]) do
          taken[#taken + 1] = entry[1]
          taken[#taken + 1] = jobOf(entry[2])
        end
      end
    end
  end
  lanes[#lanes + 1] = account
  lanes[#lanes + 1] = cursor
  lanes[#lanes + 1] = tostring(#taken / 2)
  for _, value in ipairs(taken) do lanes[#lanes + 1] = value end
end
local bell = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
return { kept, registry, lanes, bell[1] and bell[1][1] or '0-0' }`

/**
 * Resets the idle time of the entries (ARGV[3..]) that the member ARGV[2] of group ARGV[1] still
 * holds, and of no other: an entry another member reclaimed after this one's visibility passed is
 * theirs, and a late extend must not take it back (XCLAIM alone moves any pending entry).
 */
const EXTEND_SCRIPT = `local extended = 0
for i = 3, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2]) == 1 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    extended = extended + 1
  end
end
return extended`

/**
 * Hands back the heads (ARGV[4..]) the member ARGV[2] holds and did not give out: their idle time
 * set to the visibility ARGV[3], so any member's next receive reclaims them, oldest first.
 */
const HAND_BACK_SCRIPT = `for i = 4, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2]) == 1 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[3], 'JUSTID')
  end
end
return 0`

/**
 * Acknowledges and deletes entries of any number of lanes: after the lanes' base ARGV[1] and
 * group ARGV[2], per lane its account ("" for the stream of older versions KEYS[2]), a count,
 * then that many entry ids. Drops a lane (its stream, with its group, and its field in the
 * registry KEYS[1]) once it holds nothing: a publish makes it again. The stream of older
 * versions is kept. One script for every lane of an ack: a flush of acks is one round trip and
 * one script call, whatever the number of lanes it touches.
 */
const ACK_SCRIPT = `local at = 3
while at <= #ARGV do
  local account, count = ARGV[at], tonumber(ARGV[at + 1])
  local key = account == '' and KEYS[2] or ARGV[1] .. account
  local ids = {}
  for i = at + 2, at + 1 + count do ids[#ids + 1] = ARGV[i] end
  at = at + 2 + count
  redis.pcall('XACK', key, ARGV[2], unpack(ids))
  redis.call('XDEL', key, unpack(ids))
  if account ~= '' and redis.call('XLEN', key) == 0 then
    redis.call('DEL', key)
    redis.call('HDEL', KEYS[1], account)
  end
end
return 0`

/** Leaves the group of every lane (ARGV[4..]) where nothing is pending for the member: deleting a consumer drops its pending entries. */
const LEAVE_SCRIPT = `for i = 4, #ARGV do
  local key = ARGV[i] == '' and KEYS[1] or ARGV[1] .. ARGV[i]
  local pending = redis.pcall('XPENDING', key, ARGV[2], '-', '+', 1, ARGV[3])
  if type(pending) == 'table' and pending.err == nil and #pending == 0 then
    redis.pcall('XGROUP', 'DELCONSUMER', key, ARGV[2], ARGV[3])
  end
end
return 0`

/**
 * Entries one ack script takes at most: it unpacks a lane's ids into one XACK and one XDEL, and
 * Lua's stack holds some eight thousand values.
 */
const ACK_CHUNK = 1_000

/** A script run by its SHA1 (EVALSHA), sent whole (EVAL) when the server does not have it yet. */
const script = (source: string) => {
  const sha = createHash("sha1").update(source).digest("hex")
  return (client: Client, keys: Array<string>, args: Array<string>) =>
    client.evalSha(sha, { keys, arguments: args }).catch((error: unknown) => {
      if (error instanceof ErrorReply && error.message.startsWith("NOSCRIPT")) return client.eval(source, { keys, arguments: args })
      throw error
    })
}
const runPublish = script(PUBLISH_SCRIPT)
const runTake = script(TAKE_SCRIPT)
const runExtend = script(EXTEND_SCRIPT)
const runHandBack = script(HAND_BACK_SCRIPT)
const runAck = script(ACK_SCRIPT)
const runLeave = script(LEAVE_SCRIPT)

/** A delivery's receipt: its stream entry id, then its lane's account ("" for the stream of older versions). */
const receiptOf = (entryId: string, account: string) => `${entryId}:${account}`
const laneOfReceipt = (receipt: string) => {
  const at = receipt.indexOf(":")
  return { entryId: receipt.slice(0, at), account: receipt.slice(at + 1) }
}

/** Stream entry ids in stream order ("<ms>-<seq>"). */
const compareEntryIds = (a: string, b: string) => {
  const [am, as] = a.split("-").map(Number) as [number, number]
  const [bm, bs] = b.split("-").map(Number) as [number, number]
  return am - bm || as - bs
}

/** The deliveries of `receipts`, grouped by lane, each group's entry ids. */
const byLane = (receipts: ReadonlyArray<string>) => {
  const lanes = new Map<string, Array<string>>()
  for (const receipt of receipts) {
    const { account, entryId } = laneOfReceipt(receipt)
    const ids = lanes.get(account)
    if (ids === undefined) lanes.set(account, [entryId])
    else ids.push(entryId)
  }
  return lanes
}

/** A head: an entry this member took from its lane and has not given out yet. */
interface Head {
  readonly delivery: QueueDelivery
  readonly entryId: string
  /** When it was taken or last kept (its idle time reset). */
  heldAt: number
}

/**
 * The queue as Redis streams, one lane per account: `<prefix>jobs:<accountId>`, each read by its
 * consumer group `<prefix>workers`, the lanes listed with their weights in the hash `<prefix>lanes`.
 * `publish` adds an entry (field `job`) per job to its lane, making the lane and its group together
 * when it is new, and rings the bell `<prefix>lanes:bell` (a stream of one entry) that waiting
 * members block on. A member's receive is one script: it takes each lane's share of the receive
 * (entries whose holder stayed silent for `visibilityMs` first, XAUTOCLAIM, then new ones,
 * XREADGROUP) into the member's heads; the engine's `fairPick` gives out up to `max` of them in
 * weighted round robin, first in, first out within a lane. Heads not given out stay the member's:
 * kept (idle time reset) by the next receive, or handed back (made reclaimable at once) by the next
 * extend, when the member is busy. `extend` resets the idle time of the entries the member still
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
    const legacy = `${prefix}jobs`
    const base = `${prefix}jobs:`
    const registry = `${prefix}lanes`
    const bell = `${prefix}lanes:bell`
    const group = `${prefix}workers`
    const url = secretValue(options.url)
    const client = yield* connected(() => makeClient(url), "queue")
    const keyOf = (account: string) => (account === "" ? legacy : base + account)

    // One script per publish: its commands run in one round trip, and fail at once while the
    // connection is down. Not MULTI: node-redis queues a MULTI for the next reconnection even
    // without an offline queue (measured: submits waited 1.5 s while Redis was down).
    const publish = (jobs: ReadonlyArray<QueuedJob>) =>
      jobs.length === 0 ? Effect.void : call("publish", () =>
        runPublish(
          client,
          [registry, bell],
          [base, group, ...jobs.flatMap((job) => [job.accountId, job.weight === undefined ? "" : String(clampWeight(job.weight)), job.jobId])]
        )).pipe(Effect.asVoid)

    /**
     * Acknowledges and deletes the entries (by receipt): one script for every lane (and per
     * thousand entries, ACK_CHUNK), all in one round trip.
     */
    const ackReceipts = (receipts: ReadonlyArray<string>) =>
      receipts.length === 0 ? Effect.void : call("ack", () => {
        const chunks: Array<Array<string>> = []
        let args: Array<string> = []
        let size = 0
        for (const [account, ids] of byLane(receipts)) {
          for (let from = 0; from < ids.length; from += ACK_CHUNK) {
            const part = ids.slice(from, from + ACK_CHUNK)
            if (size + part.length > ACK_CHUNK) {
              chunks.push(args)
              args = []
              size = 0
            }
            args.push(account, String(part.length), ...part)
            size += part.length
          }
        }
        chunks.push(args)
        return Promise.all(chunks.map((lanes) => runAck(client, [registry, legacy], [base, group, ...lanes])))
      }).pipe(Effect.asVoid)

    const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
      Effect.gen(function*() {
        // The shared connection is down, so most likely is Redis: fail now, not at the connect deadline.
        if (!client.isReady) {
          return yield* new QueueError({ message: `Redis queue: consume (${name}) failed: not connected to Redis` })
        }
        const visibility = Math.max(0, Math.ceil(visibilityMs))
        // Heads held longer than this are kept (their idle time reset) before they are given out, or
        // handed back by an extend: never older than the visibility, so never another member's too.
        const keepAfterMs = Math.floor(visibility / 3)
        const heads = new Map<string, Array<Head>>()
        // The lanes' weights as the last receive read them, and where each lane's XAUTOCLAIM goes on.
        let weights = new Map<string, number>()
        const cursors = new Map<string, string>()
        let turn: FairTurn | undefined

        const handBack = (stale: ReadonlyArray<Head>) =>
          stale.length === 0 ? Effect.void : call("hand back", () =>
            Promise.all([...byLane(stale.map((head) => head.delivery.receipt))].map(([account, ids]) =>
              runHandBack(client, [keyOf(account)], [group, name, String(visibility), ...ids])
            ))).pipe(Effect.asVoid)

        // Added before the reader: runs after the reader closed (finalizers run in reverse).
        yield* Effect.addFinalizer(() =>
          handBack([...heads.values()].flat()).pipe(
            Effect.andThen(call(`leave the group (${name})`, () =>
              runLeave(client, [legacy], [base, group, name, ...new Set(["", ...weights.keys(), ...heads.keys()])]))),
            Effect.catch((error) => Effect.logDebug(error.message))
          )
        )
        const reader = yield* connected(() => client.duplicate(), `consumer "${name}"`)

        /** Takes each lane's room into the heads; answers the bell's last id. */
        const refill = (max: number) =>
          Effect.gen(function*() {
            const now = Date.now()
            const stale: Array<string> = []
            for (const [account, held] of heads) {
              for (const head of held) if (now - head.heldAt >= keepAfterMs) stale.push(account, head.entryId)
            }
            const total = [...weights.values()].reduce((sum, weight) => sum + weight, 0)
            const rooms = [...weights].flatMap(([account, weight]) => [
              account,
              String(Math.max(0, laneRoom(weight, total, max) - (heads.get(account)?.length ?? 0))),
              cursors.get(account) ?? "0-0"
            ])
            const reply = (yield* call("receive", () =>
              runTake(client, [registry, bell, legacy], [
                base,
                group,
                name,
                String(visibility),
                String(laneRoom(1, total + 1, max)),
                String(stale.length / 2),
                ...stale,
                ...rooms
              ]))) as [Array<string>, Array<string>, Array<string>, string]
            const [kept, lanes, taken, bellId] = reply
            // Heads another member took meanwhile are theirs now.
            if (stale.length > 0) {
              const still = new Set<string>()
              for (let i = 0; i < kept.length; i += 2) still.add(receiptOf(kept[i + 1]!, kept[i]!))
              for (const [account, held] of heads) {
                const left = held.filter((head) => now - head.heldAt < keepAfterMs || still.has(head.delivery.receipt))
                for (const head of left) head.heldAt = now
                if (left.length === 0) heads.delete(account)
                else heads.set(account, left)
              }
            }
            const next = new Map<string, number>()
            for (let i = 0; i < lanes.length; i += 2) next.set(lanes[i]!, clampWeight(Number(lanes[i + 1])))
            const strays: Array<string> = []
            for (let i = 0; i < taken.length;) {
              const account = taken[i]!
              const count = Number(taken[i + 2])
              cursors.set(account, taken[i + 1]!)
              // The stream of older versions is one more lane, of weight 1, while it exists.
              if (account === "") next.set("", 1)
              const held = heads.get(account) ?? []
              for (let j = 0; j < count; j++) {
                const entryId = taken[i + 3 + 2 * j]!
                const job = taken[i + 4 + 2 * j]!
                const receipt = receiptOf(entryId, account)
                if (job === "") strays.push(receipt)
                else if (!held.some((head) => head.entryId === entryId)) {
                  held.push({ delivery: { jobId: job as JobId, receipt }, entryId, heldAt: now })
                }
              }
              if (held.length > 0) heads.set(account, held.sort((a, b) => compareEntryIds(a.entryId, b.entryId)))
              i += 3 + 2 * count
            }
            weights = next
            for (const account of cursors.keys()) if (!next.has(account)) cursors.delete(account)
            // Entries without a job id are not this queue's: acked away, or they come back later.
            if (strays.length > 0) yield* ackReceipts(strays).pipe(Effect.catch((error) => Effect.logDebug(error.message)))
            return bellId
          })

        /** Up to `max` heads, in fair shares, taken out of the heads. */
        const pick = (max: number): Array<QueueDelivery> => {
          const lanes: Array<FairLane<Head>> = [...heads].map(([id, held]) => ({ id, weight: weights.get(id) ?? 1, heads: held }))
          const picked = fairPick(turn, lanes, max)
          turn = picked.turn
          const given = new Set(picked.picked)
          for (const [account, held] of heads) {
            const left = held.filter((head) => !given.has(head))
            if (left.length === 0) heads.delete(account)
            else heads.set(account, left)
          }
          return picked.picked.map((head) => head.delivery)
        }

        // A blocked read does not see entries becoming reclaimable: it wakes this often to look.
        const reclaimEveryMs = Math.max(100, Math.floor(visibility / 2))

        const receive = (max: number, waitMs: number): Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError> => {
          const count = Math.floor(max)
          if (count <= 0) return Effect.succeed([])
          return Effect.gen(function*() {
            const until = Date.now() + Math.max(0, waitMs)
            while (true) {
              const bellId = yield* refill(count)
              const got = pick(count)
              const left = Math.ceil(until - Date.now())
              if (got.length > 0 || left <= 0) return got
              // Woken by the next publish's bell (any since this refill's included), or to reclaim.
              const block = Math.min(left, reclaimEveryMs)
              yield* call(
                "receive (wait)",
                () => reader.xRead({ key: bell, id: bellId }, { BLOCK: block, COUNT: 1 }),
                block + COMMAND_TIMEOUT_MS
              )
            }
          })
        }

        const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
          Effect.suspend(() => {
            // A busy member's heads wait for no receive: handed back, another member may run them.
            const now = Date.now()
            const stale: Array<Head> = []
            for (const [account, held] of heads) {
              const left = held.filter((head) => now - head.heldAt < keepAfterMs)
              stale.push(...held.filter((head) => now - head.heldAt >= keepAfterMs))
              if (left.length === 0) heads.delete(account)
              else heads.set(account, left)
            }
            const extended = deliveries.length === 0 ? Effect.void : call("extend", () =>
              Promise.all([...byLane(deliveries.map((d) => d.receipt))].map(([account, ids]) =>
                runExtend(client, [keyOf(account)], [group, name, ...ids])
              ))).pipe(Effect.asVoid)
            return Effect.andThen(handBack(stale), extended)
          })

        const ack = (deliveries: ReadonlyArray<QueueDelivery>) => ackReceipts(deliveries.map((d) => d.receipt))

        const consumer: QueueConsumer = { receive, extend, ack }
        return consumer
      })

    const ping = call("ping", () => client.ping()).pipe(Effect.asVoid)

    return JobQueue.of({ publish, consume, ping })
  })

export const layerRedisJobQueue = (options: RedisJobQueueOptions) => Layer.effect(JobQueue, makeRedisJobQueue(options))
