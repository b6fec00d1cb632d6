import {
  AckPolicy,
  type Consumer,
  DeliverPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  type JsMsg,
  RetentionPolicy,
  StorageType
} from "@nats-io/jetstream"
import { connect, type NatsConnection, type NodeConnectionOptions, nanos } from "@nats-io/transport-node"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { QueueError } from "../../src/domain/errors.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueConsumer, type QueueDelivery, type QueuedJob } from "../../src/ports/JobQueue.js"

export interface NatsJobQueueOptions {
  /**
   * The server, or several: `nats://host:port` each. The client reconnects among them (and the
   * servers their cluster announces) for as long as the queue runs. Either this or `url`.
   */
  readonly servers?: string | ReadonlyArray<string> | undefined
  /**
   * One server as a URL, `nats://[user:password@|token@]host:port` (the bundled server's
   * QUEUE_URL): credentials in it are taken out and sent as `user`/`pass` or `token`. A
   * `Redacted` keeps it out of logs and traces. Either this or `servers`.
   */
  readonly url?: string | Redacted.Redacted<string> | undefined
  /** Starts every name the queue makes in NATS, as the stores' tables do; `"genjobs_"` by default. */
  readonly tablePrefix?: string | undefined
  /** The user, with `pass`, when the server requires a user and password. */
  readonly user?: string | undefined
  readonly pass?: string | Redacted.Redacted<string> | undefined
  /** The token, when the server requires a token. */
  readonly token?: string | Redacted.Redacted<string> | undefined
  /** The connection's name in the server's monitoring; `"genjobs <prefix>"` by default. */
  readonly name?: string | undefined
  /**
   * TLS for the connection (`{}`: TLS with the system's CAs), as nats.js takes it: PEM text or
   * files. Written out here so that the package's declarations do not pull in nats.js's, which
   * do not compile under `exactOptionalPropertyTypes`.
   */
  readonly tls?: {
    readonly handshakeFirst?: boolean
    readonly ca?: string
    readonly caFile?: string
    readonly cert?: string
    readonly certFile?: string
    readonly key?: string
    readonly keyFile?: string
  } | undefined
  /**
   * How long connecting, a publish's acknowledgement, an ack's confirmation and a JetStream API
   * call may take before they fail with a QueueError (a receive: its wait, and this beyond).
   * 5 000 ms by default.
   */
  readonly timeoutMs?: number | undefined
  /** The pause between two attempts to reconnect, which never stop while the queue runs; 1 000 ms by default. */
  readonly reconnectWaitMs?: number | undefined
  /**
   * The stream's duplicate window: a job id published again within it is stored once. 1 000 ms by
   * default, not NATS's two minutes: the engine's queue relay publishes a job again when the
   * broker has not delivered it within a grace (a minute by default), and a longer window would
   * drop that publish.
   */
  readonly duplicateWindowMs?: number | undefined
}

/** The stores' rule for table prefixes, its refusal as a QueueError. */
const checkPrefix = (prefix: string): Effect.Effect<string, QueueError> =>
  Effect.mapError(checkTablePrefix(prefix), (error) => new QueueError({ message: error.message }))

const DEFAULT_TIMEOUT_MS = 5_000
const DEFAULT_RECONNECT_WAIT_MS = 1_000
const DEFAULT_DUPLICATE_WINDOW_MS = 1_000

/**
 * The client's least `expires` of a pull request (nats.js refuses less), and so the least a
 * receive waits when nothing is there: a pull request is never ended on this side before the
 * server ends it, because a message the server hands to a request its client stopped reading
 * is lost to the worker until its visibility passes (measured: 1 job in 100 waited a minute
 * with receives cut at 200 ms).
 */
const MIN_EXPIRES_MS = 1_000
/** Publishes in flight at once (each awaits its PubAck); the next ones go once these are stored. */
const PUBLISH_CHUNK = 256

const valueOf = (value: string | Redacted.Redacted<string>) => (Redacted.isRedacted(value) ? Redacted.value(value) : value)

/** An error's message, with any `user:password@` of a URL in it masked. */
const reasonOf = (cause: unknown) =>
  (cause instanceof Error ? cause.message : String(cause)).replace(/\/\/[^/@\s]*@/g, "//***@")

const queueError = (operation: string, cause: unknown) =>
  new QueueError({ message: `NATS queue: ${operation} failed: ${reasonOf(cause)}`, cause })

const isApiError = (cause: unknown, code: number) => cause instanceof JetStreamApiError && cause.code === code
/** The answer to a publish no stream listens to: nats.js names it "jetstream is not enabled". */
const isNoStream = (error: QueueError) =>
  error.cause instanceof Error && (error.cause.name === "JetStreamNotEnabled" || error.cause.message.includes("no responders"))

/** Where to connect, and with what credentials. */
const connectionOptions = (options: NatsJobQueueOptions): Effect.Effect<NodeConnectionOptions, QueueError> =>
  Effect.gen(function*() {
    const auth: { user?: string; pass?: string; token?: string; tls?: NonNullable<NodeConnectionOptions["tls"]> | null } = {}
    if (options.tls !== undefined) auth.tls = { ...options.tls }
    if (options.user !== undefined) auth.user = options.user
    if (options.pass !== undefined) auth.pass = valueOf(options.pass)
    if (options.token !== undefined) auth.token = valueOf(options.token)
    if (options.url !== undefined && options.servers !== undefined) {
      return yield* Effect.fail(new QueueError({ message: "NATS queue: give either `url` or `servers`, not both" }))
    }
    if (options.servers !== undefined) {
      const servers = typeof options.servers === "string" ? [options.servers] : [...options.servers]
      if (servers.length === 0) return yield* Effect.fail(new QueueError({ message: "NATS queue: `servers` is empty" }))
      return { servers, ...auth }
    }
    if (options.url === undefined) {
      return yield* Effect.fail(new QueueError({ message: "NATS queue: give the server, as `url` or `servers`" }))
    }
    const raw = valueOf(options.url)
    // The parser names the URL in its errors: keep it (and its credentials) out.
    const url = yield* Effect.try({
      try: () => new URL(raw),
      catch: () => new QueueError({ message: "NATS queue: the url is not a valid nats://host:port URL" })
    })
    if (url.username !== "") {
      const user = decodeURIComponent(url.username)
      if (url.password !== "") {
        auth.user = user
        auth.pass = decodeURIComponent(url.password)
      } else auth.token = user
    }
    return { servers: [`${url.protocol}//${url.host}`], ...auth }
  })

type LinkState = "up" | "down" | "closed"

/**
 * The connection's state as its status events tell it: NATS reconnects by itself, and while it
 * is down every operation fails at once rather than waiting for it (nats.js would hold a
 * request until its timeout, and a pull request until it reconnected).
 */
const watchLink = (nc: NatsConnection, log: (effect: Effect.Effect<void>) => void) => {
  let state = "up" as LinkState
  const onDrop = new Set<() => void>()
  const drop = (next: LinkState) => {
    const wasUp = state === "up"
    state = next
    if (!wasUp) return
    const listeners = [...onDrop]
    onDrop.clear()
    for (const listener of listeners) listener()
  }
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" && state === "up") {
        drop("down")
        log(Effect.logWarning("NATS queue: connection lost; reconnecting"))
      } else if (status.type === "reconnect" && state === "down") {
        state = "up"
        log(Effect.logInfo("NATS queue: connection restored"))
      } else if (status.type === "close") {
        drop("closed")
      }
    }
  })().catch(() => undefined)
  void nc.closed().then(() => drop("closed"))
  return {
    state: () => state,
    /** Calls `listener` once when the connection next drops; answers how to stop listening. */
    onDrop: (listener: () => void) => {
      onDrop.add(listener)
      return () => void onDrop.delete(listener)
    }
  }
}

type Link = ReturnType<typeof watchLink>

/**
 * `run` as an effect failing with a QueueError naming `operation`: at once while the connection
 * is down, as soon as it drops, and after `timeoutMs`. `run`'s signal is aborted in each of
 * these cases, once it settled, and on interruption.
 */
const callOver = (link: Link) => <A>(operation: string, timeoutMs: number, run: (signal: AbortSignal) => Promise<A>) =>
  Effect.callback<A, QueueError>((resume, interrupted) => {
    const state = link.state()
    if (state !== "up") {
      resume(Effect.fail(
        new QueueError({
          message: `NATS queue: ${operation} failed: ${state === "closed" ? "the connection is closed" : "not connected (reconnecting)"}`
        })
      ))
      return
    }
    const controller = new AbortController()
    let settled = false
    const settle = (effect: Effect.Effect<A, QueueError> | undefined) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      stopListening()
      interrupted.removeEventListener("abort", onInterrupt)
      controller.abort()
      if (effect !== undefined) resume(effect)
    }
    const onInterrupt = () => settle(undefined)
    const timer = setTimeout(
      () => settle(Effect.fail(new QueueError({ message: `NATS queue: ${operation} got no answer within ${timeoutMs} ms` }))),
      timeoutMs
    )
    const stopListening = link.onDrop(() =>
      settle(Effect.fail(new QueueError({ message: `NATS queue: ${operation} failed: the connection was lost` })))
    )
    interrupted.addEventListener("abort", onInterrupt, { once: true })
    run(controller.signal).then(
      (value) => settle(Effect.succeed(value)),
      (cause: unknown) => settle(Effect.fail(queueError(operation, cause)))
    )
  })

/** A message received and not yet acked by its member, by its stream sequence (the receipt). */
interface Held {
  msg: JsMsg
  /** When it was last received or extended here. */
  touched: number
}

/**
 * The queue as a NATS JetStream stream, `<prefix>jobs` (work-queue retention, file storage, one
 * subject of the same name), read by one durable pull consumer, `<prefix>workers`, that every
 * member of every process pulls from. The stream is created (or its subject and duplicate window
 * updated) when the queue starts, the consumer (explicit acks, redelivered without limit after
 * `ack_wait` = the member's `visibilityMs`) when a member joins: members of one engine share one
 * `ack_wait`, the last to join sets it.
 *
 * `publish` stores one message per id (its payload and `Nats-Msg-Id` the job id), awaiting each
 * PubAck. `receive` pulls one message, waiting up to `waitMs` (a second at least) for it, then the rest of the batch
 * the first message says is waiting (its pending count), so it answers as soon as anything is
 * there. `extend` sends "working" (+WPI) for each delivery whose visibility has not passed here
 * (NATS applies a "working" to whichever delivery of the message is pending, possibly another
 * member's; the server's timer started one trip earlier, so that trip is the window left);
 * `ack` sends a confirmed ack (+ACK, awaiting the server's answer), which in a work queue deletes
 * the message.
 *
 * Operations fail at once with a QueueError while the connection is down (the client
 * reconnects in the background, forever), and within `timeoutMs` otherwise. A stream or consumer
 * found gone (a broker's store lost) is created again on the next publish or receive: the store
 * keeps the truth, and the engine's relay publishes again what the broker lost.
 */
export const makeNatsJobQueue = (
  options: NatsJobQueueOptions
): Effect.Effect<JobQueue["Service"], QueueError, Scope.Scope> =>
  Effect.gen(function*() {
    const prefix = yield* checkPrefix(options.tablePrefix ?? DEFAULT_TABLE_PREFIX)
    const streamName = `${prefix}jobs`
    const subject = streamName
    const durable = `${prefix}workers`
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS
    const target = yield* connectionOptions(options)

    const context = yield* Effect.context<never>()
    const log = (effect: Effect.Effect<void>) => void Effect.runForkWith(context)(effect)

    const nc = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          connect({
            ...target,
            name: options.name ?? `genjobs ${prefix}`,
            maxReconnectAttempts: -1,
            reconnectTimeWait: options.reconnectWaitMs ?? DEFAULT_RECONNECT_WAIT_MS,
            timeout: timeoutMs,
            // A peer gone silent (no reset) is noticed within about half a minute.
            pingInterval: 10_000,
            maxPingOut: 2
          }),
        catch: (cause) => queueError("connect", cause)
      }),
      (nc) =>
        Effect.promise(async () => {
          if (nc.isClosed()) return
          // Drain flushes what is still buffered (acks, "working"); a connection down has nothing to flush.
          if (link.state() === "up") {
            let timer: ReturnType<typeof setTimeout> | undefined
            await Promise.race([
              nc.drain().catch(() => undefined),
              new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))
            ])
            clearTimeout(timer)
          }
          if (!nc.isClosed()) await nc.close().catch(() => undefined)
        })
    )
    const link = watchLink(nc, log)
    const call = callOver(link)
    const jsm = yield* call("connect to JetStream", timeoutMs, () => jetstreamManager(nc, { timeout: timeoutMs }))
    const js = jetstream(nc, { timeout: timeoutMs })

    const streamConfig = {
      name: streamName,
      subjects: [subject],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: nanos(duplicateWindowMs)
    }
    /** Creates the stream, or brings its subject and duplicate window to this queue's. */
    const ensureStream = async () => {
      const existing = await jsm.streams.info(streamName).catch((cause: unknown) => {
        if (isApiError(cause, JetStreamApiCodes.StreamNotFound)) return undefined
        throw cause
      })
      if (existing === undefined) {
        try {
          await jsm.streams.add(streamConfig)
          return
        } catch (cause) {
          // 10058: another process created it meanwhile.
          if (!isApiError(cause, 10058)) throw cause
        }
        return ensureStream()
      }
      const config = existing.config
      if (config.retention !== RetentionPolicy.Workqueue || config.storage !== StorageType.File) {
        throw new Error(
          `the stream ${streamName} exists with ${config.retention} retention and ${config.storage} storage, ` +
            "not this queue's (workqueue, file): delete it, or give the engine another table prefix"
        )
      }
      const subjects = config.subjects ?? []
      if (subjects.length !== 1 || subjects[0] !== subject || config.duplicate_window !== streamConfig.duplicate_window) {
        await jsm.streams.update(streamName, { subjects: [subject], duplicate_window: streamConfig.duplicate_window })
      }
    }
    /** Creates the durable consumer, or sets its `ack_wait` (and unlimited deliveries) to this member's. */
    const ensureConsumer = async (visibilityMs: number): Promise<Consumer> => {
      const ackWait = nanos(visibilityMs)
      const existing = await jsm.consumers.info(streamName, durable).catch(async (cause: unknown) => {
        if (isApiError(cause, JetStreamApiCodes.ConsumerNotFound)) return undefined
        if (isApiError(cause, JetStreamApiCodes.StreamNotFound)) {
          await ensureStream()
          return undefined
        }
        throw cause
      })
      if (existing === undefined) {
        await jsm.consumers.add(streamName, {
          durable_name: durable,
          ack_policy: AckPolicy.Explicit,
          ack_wait: ackWait,
          max_deliver: -1,
          deliver_policy: DeliverPolicy.All
        }).catch(async (cause: unknown) => {
          // Created meanwhile by another member, with another ack_wait: set this one's.
          const created = await jsm.consumers.info(streamName, durable).catch(() => undefined)
          if (created === undefined) throw cause
          if (created.config.ack_wait !== ackWait) await jsm.consumers.update(streamName, durable, { ack_wait: ackWait, max_deliver: -1 })
        })
      } else if (existing.config.ack_wait !== ackWait || existing.config.max_deliver !== -1) {
        await jsm.consumers.update(streamName, durable, { ack_wait: ackWait, max_deliver: -1 })
      }
      return js.consumers.get(streamName, durable)
    }

    yield* call("create the stream", timeoutMs * 3, ensureStream)

    /** Publishes the ids, all sent at once (in order on the one connection), each awaiting its PubAck. */
    const publishChunk = (jobIds: ReadonlyArray<JobId>) =>
      call("publish", timeoutMs, async () => {
        const acks = await Promise.all(jobIds.map((jobId) => js.publish(subject, jobId, { msgID: jobId, timeout: timeoutMs })))
        for (const ack of acks) {
          if (ack.stream !== streamName) throw new Error(`stored by the stream ${ack.stream}, not ${streamName}`)
        }
      })
    const publishAll = (jobIds: ReadonlyArray<JobId>) =>
      Effect.forEach(
        Array.from({ length: Math.ceil(jobIds.length / PUBLISH_CHUNK) }, (_, i) => jobIds.slice(i * PUBLISH_CHUNK, (i + 1) * PUBLISH_CHUNK)),
        publishChunk,
        { discard: true }
      )
    const publish = (jobs: ReadonlyArray<QueuedJob>) =>
      jobs.length === 0 ? Effect.void : publishIds(jobs.map((job) => job.jobId))
    const publishIds = (jobIds: ReadonlyArray<JobId>) =>
      publishAll(jobIds).pipe(
        // No stream took it: create the stream (gone with a broker's store) and publish again.
        Effect.catchIf(isNoStream, () => Effect.andThen(call("create the stream", timeoutMs * 3, ensureStream), publishAll(jobIds)))
      )

    const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
      Effect.gen(function*() {
        const visibility = Math.max(1, Math.ceil(visibilityMs))
        let consumer = yield* call(`join the consumer (${name})`, timeoutMs * 4, () => ensureConsumer(visibility))
        // Set after a failed receive: the next one checks the consumer (and stream) first.
        let verify = false
        const held = new Map<string, Held>()
        yield* Effect.addFinalizer(() => Effect.sync(() => held.clear()))
        // A delivery neither acked nor extended here for this long is forgotten (it went back to
        // the queue long ago): an ack of it afterwards finds nothing to ack.
        const forgetAfterMs = Math.max(60_000, 10 * visibility)

        /**
         * One pull request for up to `batch` messages, ended by the server after `waitMs` (at
         * least its minimum) or once the batch is complete; never here, but when the receive is
         * interrupted (a drain): what the server sent meanwhile comes back after its visibility.
         */
        const pull = (batch: number, waitMs: number) =>
          call("receive", Math.max(MIN_EXPIRES_MS, waitMs) + timeoutMs, async (signal) => {
            const messages = await consumer.fetch({ max_messages: batch, expires: Math.max(MIN_EXPIRES_MS, waitMs) })
            const stop = () => messages.stop()
            signal.addEventListener("abort", stop, { once: true })
            const got: Array<JsMsg> = []
            try {
              for await (const msg of messages) got.push(msg)
            } finally {
              signal.removeEventListener("abort", stop)
            }
            return got
          })

        /** The deliveries of the messages, each held under its receipt; messages without a job id acked away. */
        const keep = (messages: ReadonlyArray<JsMsg>) => {
          const now = Date.now()
          for (const [receipt, entry] of held) if (now - entry.touched > forgetAfterMs) held.delete(receipt)
          const deliveries: Array<QueueDelivery> = []
          for (const msg of messages) {
            const jobId = msg.string()
            if (jobId === "") {
              msg.ack()
              continue
            }
            const receipt = String(msg.seq)
            held.set(receipt, { msg, touched: now })
            deliveries.push({ jobId: jobId as JobId, receipt })
          }
          return deliveries
        }

        const receive = (max: number, waitMs: number): Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError> => {
          const count = Math.floor(max)
          if (!(count > 0)) return Effect.succeed([])
          return Effect.gen(function*() {
            if (verify) {
              consumer = yield* call("receive (check the consumer)", timeoutMs * 4, () => ensureConsumer(visibility))
              verify = false
            }
            const first = yield* pull(1, waitMs)
            const pending = first[0]?.info.pending ?? 0
            const wanted = Math.min(count - first.length, pending)
            // The rest of the batch is there already: a request for exactly that many completes
            // as soon as it came, unless other members took some meanwhile; then the server ends
            // it at its least expiry.
            const rest = first.length === 0 || wanted <= 0
              ? []
              : yield* pull(wanted, MIN_EXPIRES_MS).pipe(
                // The first is answered all the same; the error shows on the next receive.
                Effect.catch(() =>
                  Effect.sync((): Array<JsMsg> => {
                    verify = true
                    return []
                  })
                )
              )
            return keep([...first, ...rest])
          }).pipe(Effect.tapError(() => Effect.sync(() => (verify = true))))
        }

        const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
          deliveries.length === 0 ? Effect.void : Effect.suspend(() => {
            if (link.state() !== "up") {
              return Effect.fail(new QueueError({ message: "NATS queue: extend failed: not connected (reconnecting)" }))
            }
            return Effect.try({
              try: () => {
                const now = Date.now()
                for (const delivery of deliveries) {
                  const entry = held.get(delivery.receipt)
                  // Past its visibility the server may have handed it to another member, and a
                  // "working" does not say which delivery it is for: it would keep that one's.
                  if (entry === undefined || now - entry.touched >= visibility) continue
                  entry.msg.working()
                  entry.touched = now
                }
              },
              catch: (cause) => queueError("extend", cause)
            })
          })

        const ack = (deliveries: ReadonlyArray<QueueDelivery>) =>
          Effect.suspend(() => {
            // One ack per receipt: a message redelivered to this member holds one receipt (its stream
            // sequence), which the deliveries of it share.
            const entries = [...new Set(deliveries.map((delivery) => delivery.receipt))].flatMap((receipt) => {
              const entry = held.get(receipt)
              return entry === undefined ? [] : [{ receipt, msg: entry.msg }]
            })
            if (entries.length === 0) return Effect.void
            return call("ack", timeoutMs, () =>
              Promise.all(entries.map(async ({ msg, receipt }) => {
                const confirmed = await msg.ackAck({ timeout: timeoutMs })
                held.delete(receipt)
                // False when this delivery was acked before, unconfirmed (a confirmed ack drops
                // its receipt): a JsMsg sends its ack once. If that ack was lost, the message
                // comes back after its visibility.
                if (!confirmed) throw new Error(`an earlier ack of delivery ${receipt} was not confirmed, and is not sent twice`)
              })))
          }).pipe(Effect.asVoid)

        const member: QueueConsumer = { receive, extend, ack }
        return member
      })

    // A JetStream API call rather than a plain flush: the stream's server must answer, not only the connection.
    const ping = call("ping", timeoutMs, () => jsm.getAccountInfo()).pipe(Effect.asVoid)

    return JobQueue.of({ publish, consume, ping })
  })

/** `makeNatsJobQueue` as the engine's JobQueue: connected while the layer's scope is open. */
export const layerNatsJobQueue = (options: NatsJobQueueOptions) => Layer.effect(JobQueue, makeNatsJobQueue(options))
