import { createClient, ErrorReply } from "@redis/client"
import { Duration, Effect, Layer, type Scope } from "effect"
import { QueueError } from "../../src/domain/errors.js"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueConsumer, type QueueDelivery } from "../../src/ports/JobQueue.js"

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

const isNoGroup = (error: QueueError) => error.cause instanceof ErrorReply && error.cause.message.startsWith("NOGROUP")

/** The command's promise as an effect failing with a QueueError naming `operation`, within `timeoutMs`. */
const call = <A>(operation: string, run: () => Promise<A>, timeoutMs = COMMAND_TIMEOUT_MS) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new QueueError({ message: `Redis queue: ${operation} failed: ${reasonOf(cause)}`, cause })
  }).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(timeoutMs),
      orElse: () => Effect.fail(new QueueError({ message: `Redis queue: ${operation} got no answer within ${timeoutMs} ms` }))
    })
  )

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

type StreamEntry = { readonly id: string; readonly message: Record<string, unknown> }

/**
 * The job id of each stream entry (its `job` field) with the entry id as its receipt, and the ids
 * of entries without one (not this queue's: dropped). Entries deleted meanwhile come as null.
 */
const deliveriesOf = (entries: ReadonlyArray<StreamEntry | null>) => {
  const deliveries: Array<QueueDelivery> = []
  const strays: Array<string> = []
  for (const entry of entries) {
    if (entry === null) continue
    const job = entry.message["job"]
    if (typeof job === "string" && job !== "") deliveries.push({ jobId: job as JobId, receipt: entry.id })
    else strays.push(entry.id)
  }
  return { deliveries, strays }
}

/** Leaves the group if nothing is pending for the member: deleting a consumer drops its pending entries. */
const LEAVE_SCRIPT = `if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) == 0 then
  redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
end
return 0`

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
 * The queue as a Redis stream, `<prefix>jobs`, read by one consumer group, `<prefix>workers`:
 * `publish` adds an entry (field `job`) per id; members read new entries with XREADGROUP and take
 * over the entries whose holder stayed silent for `visibilityMs` with XAUTOCLAIM; `extend` resets
 * the idle time of the entries the member still holds (XPENDING, then XCLAIM, in one script), `ack` acknowledges and deletes it, so the stream holds only jobs
 * not yet done.
 *
 * The group is created when the queue starts, and again whenever Redis answers that it is gone
 * (a broker restarted without persistence): the store keeps the truth, so jobs lost with the
 * broker's data are the engine's to find again; jobs published since are delivered.
 *
 * Every member reads over a connection of its own (XREADGROUP BLOCK holds its connection); the
 * rest goes over one shared connection. Commands fail at once with a QueueError while Redis is
 * unreachable, and the connections reconnect in the background.
 */
export const makeRedisJobQueue = (
  options: RedisJobQueueOptions
): Effect.Effect<JobQueue["Service"], QueueError, Scope.Scope> =>
  Effect.gen(function*() {
    const prefix = yield* checkPrefix(options.tablePrefix ?? DEFAULT_TABLE_PREFIX)
    const key = `${prefix}jobs`
    const group = `${prefix}workers`
    const url = secretValue(options.url)
    const client = yield* connected(() => makeClient(url), "queue")

    const createGroup = call("create the consumer group", () =>
      client.xGroupCreate(key, group, "0", { MKSTREAM: true }).catch((error: unknown) => {
        if (error instanceof ErrorReply && error.message.startsWith("BUSYGROUP")) return "OK"
        throw error
      }))
    /** Runs `effect` again once the group is created, if Redis answered that it has none. */
    const withGroup = <A>(effect: Effect.Effect<A, QueueError>) =>
      effect.pipe(Effect.catchIf(isNoGroup, () => Effect.andThen(createGroup, effect)))

    yield* createGroup

    // Commands sent in one tick go out pipelined, in one round trip, and fail at once while the
    // connection is down. Not MULTI: node-redis queues a MULTI for the next reconnection even
    // without an offline queue (measured: submits waited 1.5 s while Redis was down). Neither
    // needs to be atomic: a publish half done is made up by the relay, an ack half done is a
    // delivery turned away later.
    const publish = (jobIds: ReadonlyArray<JobId>) =>
      jobIds.length === 0
        ? Effect.void
        : call("publish", () => Promise.all(jobIds.map((jobId) => client.xAdd(key, "*", { job: jobId })))).pipe(Effect.asVoid)

    /** Acknowledges and deletes the entries, in one round trip. */
    const ackIds = (ids: Array<string>) =>
      ids.length === 0
        ? Effect.void
        : call("ack", () => Promise.all([client.xAck(key, group, ids), client.xDel(key, ids)])).pipe(Effect.asVoid)
    /**
     * The deliveries of the entries read; the entries without a job id acknowledged away, if that
     * works (else they come back later): the deliveries taken are answered either way.
     */
    const keep = (entries: ReadonlyArray<StreamEntry | null>) => {
      const { deliveries, strays } = deliveriesOf(entries)
      return strays.length === 0 ? Effect.succeed(deliveries) : ackIds(strays).pipe(
        Effect.catch((error) => Effect.logDebug(error.message)),
        Effect.as(deliveries)
      )
    }

    const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
      Effect.gen(function*() {
        // The shared connection is down, so most likely is Redis: fail now, not at the connect deadline.
        if (!client.isReady) {
          return yield* new QueueError({ message: `Redis queue: consume (${name}) failed: not connected to Redis` })
        }
        const visibility = Math.max(0, Math.ceil(visibilityMs))
        // Added before the reader: runs after the reader closed (finalizers run in reverse).
        yield* Effect.addFinalizer(() =>
          call(`leave the group (${name})`, () => client.eval(LEAVE_SCRIPT, { keys: [key], arguments: [group, name] })).pipe(
            Effect.catch((error) => Effect.logDebug(error.message))
          )
        )
        const reader = yield* connected(() => client.duplicate(), `consumer "${name}"`)
        // Where the next XAUTOCLAIM starts: each call scans a bounded part of the pending entries,
        // so a long list is scanned in turns, back to the start once it reached the end.
        let claimCursor = "0-0"

        /** The entries whose holder let `visibility` pass, oldest first. */
        const reclaim = (count: number) =>
          withGroup(call("receive (reclaim)", () => client.xAutoClaim(key, group, name, visibility, claimCursor, { COUNT: count }))).pipe(
            Effect.flatMap((reply) => {
              claimCursor = String(reply.nextId)
              return keep(reply.messages as ReadonlyArray<StreamEntry | null>)
            })
          )

        /** New entries, waiting up to `blockMs` (0: not at all) for one. */
        const readNew = (count: number, blockMs: number) =>
          withGroup(call(
            "receive",
            () => reader.xReadGroup(group, name, { key, id: ">" }, { COUNT: count, ...(blockMs > 0 ? { BLOCK: blockMs } : {}) }),
            blockMs + COMMAND_TIMEOUT_MS
          )).pipe(
            Effect.flatMap((reply) => {
              const streams = (reply ?? []) as ReadonlyArray<{ readonly messages: ReadonlyArray<StreamEntry> }>
              return keep(streams.flatMap((stream) => stream.messages))
            })
          )

        // A blocked read does not see entries becoming reclaimable: it wakes this often to look.
        const reclaimEveryMs = Math.max(100, Math.floor(visibility / 2))

        const receive = (max: number, waitMs: number): Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError> => {
          const count = Math.floor(max)
          if (count <= 0) return Effect.succeed([])
          return Effect.gen(function*() {
            const until = Date.now() + Math.max(0, waitMs)
            while (true) {
              const reclaimed = yield* reclaim(count)
              const rest = count - reclaimed.length
              if (rest === 0) return reclaimed
              const left = Math.ceil(until - Date.now())
              // Blocks only when nothing came back: what is there is answered at once.
              const block = reclaimed.length > 0 || left <= 0 ? 0 : Math.min(left, reclaimEveryMs)
              const fresh = yield* readNew(rest, block)
              const got = [...reclaimed, ...fresh]
              if (got.length > 0 || Date.now() >= until) return got
            }
          })
        }

        const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
          deliveries.length === 0 ? Effect.void : withGroup(
            call("extend", () =>
              client.eval(EXTEND_SCRIPT, { keys: [key], arguments: [group, name, ...deliveries.map((d) => d.receipt)] }))
          ).pipe(Effect.asVoid)

        const ack = (deliveries: ReadonlyArray<QueueDelivery>) => ackIds(deliveries.map((d) => d.receipt))

        const consumer: QueueConsumer = { receive, extend, ack }
        return consumer
      })

    const ping = call("ping", () => client.ping()).pipe(Effect.asVoid)

    return JobQueue.of({ publish, consume, ping })
  })

export const layerRedisJobQueue = (options: RedisJobQueueOptions) => Layer.effect(JobQueue, makeRedisJobQueue(options))
