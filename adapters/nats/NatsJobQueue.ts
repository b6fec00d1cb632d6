import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType
} from "@nats-io/jetstream"
import { connect, createInbox, headers, type Msg, type NatsConnection, type NodeConnectionOptions, nanos } from "@nats-io/transport-node"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { QueueError } from "../../src/domain/errors.js"
import { fairPick, type FairLane, type FairTurn, laneRoom } from "../../src/domain/fairPick.js"
import { clampWeight } from "../../src/domain/fairShare.js"
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

/** A delivery's acknowledgement, "working" (its ack wait started again) and nak (handed back, redelivered at once). */
const ACK = "+ACK"
const WORKING = "+WPI"
const NAK = "-NAK"

/** The header a publish carries an account's fair-share weight in (absent: the lane keeps the weight it has). */
const WEIGHT_HEADER = "Genjobs-Weight"

/**
 * A lane's name in subjects and consumer names: an account id as it is, but for the characters
 * NATS reserves there (`.`, `*`, `>`, whitespace, path separators), each written `=XX` (hex), as
 * is `=` itself. Account ids are `acc_<token>`: nothing to write out in practice.
 */
const laneToken = (account: string) => account.replace(/[^A-Za-z0-9_-]/g, (c) => `=${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
const accountOfToken = (token: string) => token.replace(/=([0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))

/**
 * A delivery's place in its ack subject, `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.…`
 * (nine tokens; eleven and more with a domain and an account hash): its consumer and stream sequence.
 */
const ackSubjectOf = (reply: string): { consumer: string; seq: number } | undefined => {
  const tokens = reply.split(".")
  if (tokens[0] !== "$JS" || tokens[1] !== "ACK") return undefined
  const at = tokens.length === 9 ? 2 : 4
  const consumer = tokens[at + 1]
  const seq = Number(tokens[at + 3])
  return consumer === undefined || !Number.isSafeInteger(seq) ? undefined : { consumer, seq }
}

/** A delivery a member holds: as a head (not given out yet) or given out to a runner. */
interface Held {
  readonly jobId: JobId
  /** Its lane's account ("" the subject of older versions). */
  readonly account: string
  /** The stream sequence, the delivery's receipt. */
  readonly seq: number
  /** Where acks, "working" and naks of this delivery go. */
  readonly reply: string
  /** When it was last received or extended here. */
  touched: number
}

/**
 * The queue as a NATS JetStream stream, `<prefix>jobs` (work-queue retention, file storage), one
 * subject per account, `<prefix>jobs.<accountId>` (its lane), each read by its durable pull
 * consumer `<prefix>workers_<accountId>` that every member of every process pulls from. The
 * subject `<prefix>jobs` of versions before the lanes is one more lane (weight 1), read by the
 * durable `<prefix>workers` narrowed to it. The stream is created (or its subjects and duplicate
 * window updated, the old durable narrowed) when the queue starts; a lane's consumer (explicit
 * acks, redelivered without limit after `ack_wait` = the member's `visibilityMs`, deleted by the
 * server once no member pulled from it for an hour, `inactive_threshold`) when a member first
 * pulls from it: members of one engine share one `ack_wait`, the last to join a lane sets it.
 *
 * `publish` stores one message per id on its account's subject (its payload and `Nats-Msg-Id`
 * the job id, the weight in the header `Genjobs-Weight` when given), awaiting each PubAck, then
 * sends one core message on `<prefix>bell` naming the lanes it published to. A member pulls the
 * lanes it knows to hold messages: those the bells named, and those the stream's info lists
 * (`subjects_filter`: a count per subject), read every half visibility at most; a lane whose
 * pull gives nothing is left until named again. A receive pulls each such lane's share with one
 * no-wait request per lane (all at once, answered at once even when a lane has nothing to give),
 * and gives out up to `max` of what it holds in weighted round robin (`fairPick`), first in,
 * first out within a lane. What it holds and did not give out (its heads) stays its delivery:
 * kept ("working") by the next receive, handed back (a nak, so the lane's next pull gets it, and
 * a bell for its lane) by an extend while the member is busy, or when it leaves. With nothing to
 * give, a receive waits for the bell, and looks again every half visibility for deliveries whose
 * holder went silent (a redelivery rings no bell). While it waits, one pull waits at the server on
 * the lane it last received from (its batch the receive's `max`, expiring with the wait): a message
 * stored there comes at once rather than after the bell and a pull; one that comes once no
 * receive runs is handed back.
 *
 * `extend` sends "working" (+WPI) for each delivery whose visibility has not passed here (NATS
 * applies a "working" to whichever delivery of the message is pending, possibly another
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
    const legacySubject = streamName
    const lanesSubject = `${streamName}.>`
    const bellSubject = `${prefix}bell`
    const durable = `${prefix}workers`
    const subjectOf = (account: string) => (account === "" ? legacySubject : `${streamName}.${laneToken(account)}`)
    const consumerOf = (account: string) => (account === "" ? durable : `${durable}_${laneToken(account)}`)
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

    const streamSubjects = [legacySubject, lanesSubject]
    const streamConfig = {
      name: streamName,
      subjects: streamSubjects,
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: nanos(duplicateWindowMs)
    }
    /**
     * Creates the stream, or brings its subjects and duplicate window to this queue's; narrows the
     * durable of versions before the lanes to the subject they published to (a work queue refuses
     * consumers whose filters overlap, and an unfiltered one overlaps every lane's).
     */
    const ensureStream = async (): Promise<void> => {
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
      if (
        subjects.length !== streamSubjects.length || streamSubjects.some((s) => !subjects.includes(s)) ||
        config.duplicate_window !== streamConfig.duplicate_window
      ) {
        const old = await jsm.consumers.info(streamName, durable).catch((cause: unknown) => {
          if (isApiError(cause, JetStreamApiCodes.ConsumerNotFound)) return undefined
          throw cause
        })
        if (old !== undefined && old.config.filter_subject !== legacySubject) {
          await jsm.consumers.update(streamName, durable, { filter_subject: legacySubject })
        }
        await jsm.streams.update(streamName, { subjects: streamSubjects, duplicate_window: streamConfig.duplicate_window })
      }
    }

    /**
     * Creates the lane's durable consumer, or sets its `ack_wait` (and unlimited deliveries) to
     * this member's. Idle for `inactiveMs` (no pull), the server deletes it; the next pull makes it again.
     */
    const ensureLane = async (account: string, ackWait: number, inactiveMs: number): Promise<void> => {
      const name = consumerOf(account)
      const settings = { ack_wait: ackWait, max_deliver: -1, inactive_threshold: nanos(inactiveMs) }
      const existing = await jsm.consumers.info(streamName, name).catch(async (cause: unknown) => {
        if (isApiError(cause, JetStreamApiCodes.ConsumerNotFound)) return undefined
        if (isApiError(cause, JetStreamApiCodes.StreamNotFound)) {
          await ensureStream()
          return undefined
        }
        throw cause
      })
      const current = existing?.config
      if (current === undefined) {
        await jsm.consumers.add(streamName, {
          durable_name: name,
          filter_subject: subjectOf(account),
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ...settings
        }).catch(async (cause: unknown) => {
          // Created meanwhile by another member, with another ack_wait: set this one's.
          const created = await jsm.consumers.info(streamName, name).catch(() => undefined)
          if (created === undefined) throw cause
          if (created.config.ack_wait !== ackWait) await jsm.consumers.update(streamName, name, settings)
        })
      } else if (
        current.ack_wait !== ackWait || current.max_deliver !== -1 || current.inactive_threshold !== settings.inactive_threshold
      ) {
        await jsm.consumers.update(streamName, name, settings)
      }
    }

    yield* call("create the stream", timeoutMs * 3, ensureStream)

    /** Publishes the jobs, all sent at once (in order on the one connection), each awaiting its PubAck. */
    const publishChunk = (jobs: ReadonlyArray<QueuedJob>) =>
      call("publish", timeoutMs, async () => {
        const acks = await Promise.all(jobs.map((job) => {
          const weight = job.weight === undefined ? undefined : headers()
          weight?.set(WEIGHT_HEADER, String(clampWeight(job.weight!)))
          return js.publish(subjectOf(job.accountId), job.jobId, {
            msgID: job.jobId,
            timeout: timeoutMs,
            ...(weight === undefined ? {} : { headers: weight })
          })
        }))
        for (const ack of acks) {
          if (ack.stream !== streamName) throw new Error(`stored by the stream ${ack.stream}, not ${streamName}`)
        }
        // Stored: members wake and read these lanes.
        nc.publish(bellSubject, [...new Set(jobs.map((job) => laneToken(job.accountId)))].join(" "))
      })
    const publishAll = (jobs: ReadonlyArray<QueuedJob>) =>
      Effect.forEach(
        Array.from({ length: Math.ceil(jobs.length / PUBLISH_CHUNK) }, (_, i) => jobs.slice(i * PUBLISH_CHUNK, (i + 1) * PUBLISH_CHUNK)),
        publishChunk,
        { discard: true }
      )
    const publish = (jobs: ReadonlyArray<QueuedJob>) =>
      jobs.length === 0 ? Effect.void : publishAll(jobs).pipe(
        // No stream took it: create the stream (gone with a broker's store) and publish again.
        Effect.catchIf(isNoStream, () => Effect.andThen(call("create the stream", timeoutMs * 3, ensureStream), publishAll(jobs)))
      )

    const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
      Effect.gen(function*() {
        const visibility = Math.max(1, Math.ceil(visibilityMs))
        const ackWait = nanos(visibility)
        // A lane's consumer outlives an hour without pulls (and ten visibilities): a member busy with
        // its deliveries for that long does not lose them to a consumer made again.
        const inactiveMs = Math.max(3_600_000, 10 * visibility)
        // Heads held longer than this are kept ("working") before they are given out, or handed
        // back by an extend: never older than the visibility, so never another member's too.
        const keepAfterMs = Math.floor(visibility / 3)
        // A delivery neither acked nor extended here for this long is forgotten (it went back to
        // the queue long ago): an ack of it afterwards finds nothing to ack.
        const forgetAfterMs = Math.max(60_000, 10 * visibility)
        // A wait for the bell does not see deliveries whose holder went silent: it wakes this often to look.
        const lookEveryMs = Math.max(100, Math.floor(visibility / 2))

        /**
         * The lanes that may have messages for this member, by account ("" the subject of older
         * versions), each with the bell's count when it was last named: named by the bells since
         * the last listing, or by that listing; dropped when a pull finds nothing there.
         */
        const active = new Map<string, number>()
        let listedAt = -Infinity

        const heads = new Map<string, Array<Held>>()
        const given = new Map<string, Held>()
        const weights = new Map<string, number>()
        /** The lanes whose consumer this member made or found, and when it last did or pulled from it. */
        const lanesKnown = new Map<string, number>()
        const laneOfConsumer = new Map<string, string>()
        let turn: FairTurn | undefined
        /** The lane this member last received from: the one its waiting pull waits on. */
        let lastLane: string | undefined
        /**
         * The waiting pull, when one is out: a request the server holds on the last lane's consumer
         * while a receive waits, so a message stored there comes at once, without the bell and a
         * pull after it. Over at its batch, its status (408: expired) or `until`, whichever first.
         */
        let waiting: { readonly token: string; readonly account: string; left: number; readonly until: number } | undefined
        /** A receive is running: what the waiting pull brings is its to pick; otherwise it is handed back at once. */
        let receiving = false

        /**
         * Pulls in flight by the last token of their reply inbox: their lane and the messages still
         * to come. A pull is over once its batch came whole, or at its status (404: nothing, 408: less).
         */
        const inbox = createInbox()
        let nextToken = 0
        const pulls = new Map<string, { readonly account: string; readonly batch: number; left: number; readonly epoch: number }>()
        const pullOfLane = new Map<string, string>()
        let pullsDone: (() => void) | undefined
        const endPull = (token: string | undefined) => {
          const pull = token === undefined ? undefined : pulls.get(token)
          if (pull === undefined) return
          // Nothing came: the lane is empty for this member until a bell or the next listing names it
          // (not when a bell named it since the pull went out).
          if (pull.left === pull.batch && active.get(pull.account) === pull.epoch) active.delete(pull.account)
          pulls.delete(token!)
          pullOfLane.delete(pull.account)
          if (pulls.size === 0) pullsDone?.()
        }
        const onMessage = (msg: Msg) => {
          const code = msg.headers?.code ?? 0
          // A status (404 no messages, 408 the batch not full or expired) comes on its pull's inbox: that pull is over.
          if (code >= 100 && msg.data.length === 0) {
            const token = msg.subject.slice(inbox.length + 1)
            if (token === waiting?.token) waiting = undefined
            return endPull(token)
          }
          // A message carries its stream subject, not the inbox: its lane says which pull brought
          // it, the waiting pull's when no other pull is out on that lane.
          const at = msg.reply === undefined ? undefined : ackSubjectOf(msg.reply)
          const account = at === undefined ? undefined : laneOfConsumer.get(at.consumer)
          if (at === undefined || account === undefined) return
          const fromWaiting = waiting !== undefined && waiting.account === account && !pullOfLane.has(account)
          if (fromWaiting) {
            if (--waiting!.left <= 0) waiting = undefined
          } else {
            const token = pullOfLane.get(account)
            const pull = token === undefined ? undefined : pulls.get(token)
            if (pull !== undefined && --pull.left <= 0) endPull(token)
          }
          lastLane = account
          const jobId = msg.string()
          // Not this queue's: acked away.
          if (jobId === "") return void msg.respond(ACK)
          const weight = msg.headers?.get(WEIGHT_HEADER)
          if (weight !== undefined && weight !== "") weights.set(account, clampWeight(Number(weight)))
          const lane = heads.get(account) ?? []
          const head: Held = { jobId: jobId as JobId, account, seq: at.seq, reply: msg.reply!, touched: Date.now() }
          const same = lane.findIndex((h) => h.seq === at.seq)
          if (same >= 0) lane[same] = head
          else lane.push(head)
          heads.set(account, lane.sort((a, b) => a.seq - b.seq))
          if (!fromWaiting) return
          // Brought by the waiting pull: the waiting receive takes it now, as if the bell rang. With
          // no receive running (this member busy), it is handed back for another member to run.
          if (receiving) {
            bell.rung++
            bell.wake?.()
          } else {
            heads.set(account, lane.filter((h) => h !== head))
            if (heads.get(account)!.length === 0) heads.delete(account)
            handBack([head])
          }
        }
        const answers = nc.subscribe(`${inbox}.*`, {
          callback: (error, msg) => {
            if (error === null) onMessage(msg)
          }
        })
        const bell = { rung: 0, wake: undefined as (() => void) | undefined }
        const bellSub = nc.subscribe(bellSubject, {
          callback: (error, msg) => {
            if (error !== null) return
            bell.rung++
            for (const token of msg.string().split(" ")) if (token !== "") active.set(accountOfToken(token), bell.rung)
            bell.wake?.()
          }
        })

        /** Sends each of `replies` its `body` ("working", or a nak handing it back); nothing while disconnected. */
        const tell = (replies: ReadonlyArray<string>, body: string) => {
          if (link.state() !== "up") return
          for (const reply of replies) nc.publish(reply, body)
        }
        /** Naks the heads (each lane's next pull gets them again), and rings the bell for their lanes: members that found them empty look again. */
        const handBack = (stale: ReadonlyArray<Held>) => {
          if (stale.length === 0 || link.state() !== "up") return
          tell(stale.map((h) => h.reply), NAK)
          nc.publish(bellSubject, [...new Set(stale.map((h) => laneToken(h.account)))].join(" "))
        }

        // Added first: runs last, once the member's receives are over.
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            handBack([...heads.values()].flat())
            heads.clear()
            given.clear()
            if (!nc.isClosed()) {
              answers.unsubscribe()
              bellSub.unsubscribe()
            }
          })
        )

        /** Makes sure the lanes' consumers exist (those this member has not seen lately). */
        const ensureLanes = (accounts: ReadonlyArray<string>) => {
          const now = Date.now()
          const missing = accounts.filter((account) => now - (lanesKnown.get(account) ?? -Infinity) > inactiveMs / 4)
          if (missing.length === 0) return Effect.void
          return call(`join the lanes (${name})`, timeoutMs * 4, () =>
            Promise.all(missing.map(async (account) => {
              await ensureLane(account, ackWait, inactiveMs)
              lanesKnown.set(account, Date.now())
              laneOfConsumer.set(consumerOf(account), account)
            })))
        }

        /** The lanes with messages (delivered or not), by their accounts: the stream's count per subject. */
        const readLanes = call("receive (list the lanes)", timeoutMs, async () => {
          const info = await jsm.streams.info(streamName, { subjects_filter: ">" }).catch(async (cause: unknown) => {
            if (!isApiError(cause, JetStreamApiCodes.StreamNotFound)) throw cause
            await ensureStream()
            return undefined
          })
          const counts = new Map<string, number>()
          for (const [subject, count] of Object.entries(info?.state.subjects ?? {})) {
            if (count <= 0) continue
            if (subject === legacySubject) counts.set("", count)
            else if (subject.startsWith(`${streamName}.`)) counts.set(accountOfToken(subject.slice(streamName.length + 1)), count)
          }
          return counts
        })

        /** Keeps the heads held a while ("working"); drops those held past their visibility (another member's by now). */
        const keepHeads = () => {
          const now = Date.now()
          const kept: Array<string> = []
          for (const [account, lane] of heads) {
            const left = lane.filter((head) => now - head.touched < visibility)
            for (const head of left) {
              if (now - head.touched < keepAfterMs) continue
              kept.push(head.reply)
              head.touched = now
            }
            if (left.length === 0) heads.delete(account)
            else heads.set(account, left)
          }
          tell(kept, WORKING)
        }

        /** Pulls each lane's room into the heads: one no-wait request per lane, all at once. */
        const refill = (max: number) =>
          Effect.gen(function*() {
            keepHeads()
            // Listed every half visibility at most: redeliveries (their holder went silent) ring no
            // bell, nor did the publishes before this member joined, or an earlier version's.
            if (Date.now() - listedAt >= lookEveryMs) {
              const rung = bell.rung
              const counts = yield* readLanes
              listedAt = Date.now()
              for (const [account, epoch] of active) if (epoch <= rung && !counts.has(account)) active.delete(account)
              for (const account of counts.keys()) if (!active.has(account)) active.set(account, rung)
              for (const account of weights.keys()) if (!counts.has(account) && !heads.has(account)) weights.delete(account)
            }
            const total = [...active.keys()].reduce((sum, account) => sum + (weights.get(account) ?? 1), 0)
            const rooms = [...active.keys()].flatMap((account) => {
              const room = laneRoom(weights.get(account) ?? 1, total, max) - (heads.get(account)?.length ?? 0)
              return room > 0 ? [{ account, room }] : []
            })
            if (rooms.length === 0) return
            yield* ensureLanes(rooms.map((lane) => lane.account))
            // Every lane answers at once (no wait), messages then a status; one that does not answer
            // within `timeoutMs` has no consumer (deleted meanwhile): it is made again on the next receive.
            yield* call("receive", timeoutMs * 2, () =>
              new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, timeoutMs)
                pulls.clear()
                pullOfLane.clear()
                pullsDone = () => {
                  clearTimeout(timer)
                  resolve()
                }
                for (const { account, room } of rooms) {
                  const token = String(nextToken++)
                  pulls.set(token, { account, batch: room, left: room, epoch: active.get(account) ?? 0 })
                  pullOfLane.set(account, token)
                  nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${streamName}.${consumerOf(account)}`, JSON.stringify({ batch: room, no_wait: true }), {
                    reply: `${inbox}.${token}`
                  })
                  lanesKnown.set(account, Date.now())
                }
              })).pipe(
                Effect.ensuring(Effect.sync(() => {
                  pullsDone = undefined
                  for (const { account } of pulls.values()) lanesKnown.delete(account)
                  pulls.clear()
                  pullOfLane.clear()
                }))
              )
          })

        /** Up to `max` heads, in fair shares, taken out of the heads and held as given out. */
        const pick = (max: number): Array<QueueDelivery> => {
          const lanes: Array<FairLane<Held>> = [...heads].map(([id, lane]) => ({ id, weight: weights.get(id) ?? 1, heads: lane }))
          const picked = fairPick(turn, lanes, max)
          turn = picked.turn
          const out = new Set(picked.picked)
          for (const [account, lane] of heads) {
            const left = lane.filter((head) => !out.has(head))
            if (left.length === 0) heads.delete(account)
            else heads.set(account, left)
          }
          const now = Date.now()
          for (const [receipt, entry] of given) if (now - entry.touched > forgetAfterMs) given.delete(receipt)
          return picked.picked.map((head) => {
            const receipt = String(head.seq)
            given.set(receipt, head)
            return { jobId: head.jobId, receipt }
          })
        }

        /** Waits for the bell (a publish since `rung`) or `ms`, failing at once if the connection drops. */
        const waitForBell = (rung: number, ms: number) =>
          call("receive (wait)", ms + timeoutMs, (signal) =>
            new Promise<void>((resolve) => {
              if (bell.rung !== rung) return resolve()
              const timer = setTimeout(done, ms)
              function done() {
                clearTimeout(timer)
                signal.removeEventListener("abort", done)
                if (bell.wake === done) bell.wake = undefined
                resolve()
              }
              bell.wake = done
              // Ended on this side (interrupted, the connection lost): its timer goes too.
              signal.addEventListener("abort", done, { once: true })
            }))

        /**
         * Sends the waiting pull on the last lane for a wait of `ms`, unless one is out: up to
         * `count` messages, held by the server until they come or `ms` passed.
         */
        const pullWaiting = (count: number, ms: number) => {
          const account = lastLane
          if (account === undefined || link.state() !== "up" || !laneOfConsumer.has(consumerOf(account))) return
          const now = Date.now()
          if (waiting !== undefined && waiting.until > now) return
          const token = `w${nextToken++}`
          waiting = { token, account, left: count, until: now + ms }
          nc.publish(
            `$JS.API.CONSUMER.MSG.NEXT.${streamName}.${consumerOf(account)}`,
            JSON.stringify({ batch: count, expires: nanos(ms) }),
            { reply: `${inbox}.${token}` }
          )
        }

        const receive = (max: number, waitMs: number): Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError> => {
          const count = Math.floor(max)
          if (!(count > 0)) return Effect.succeed([])
          return Effect.gen(function*() {
            receiving = true
            const until = Date.now() + Math.max(0, waitMs)
            while (true) {
              const rung = bell.rung
              yield* refill(count)
              const got = pick(count)
              const left = Math.ceil(until - Date.now())
              if (got.length > 0 || left <= 0) return got
              const wait = Math.min(left, lookEveryMs)
              pullWaiting(count, wait)
              yield* waitForBell(rung, wait)
            }
          }).pipe(Effect.ensuring(Effect.sync(() => {
            receiving = false
          })))
        }

        const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
          Effect.suspend(() => {
            if (link.state() !== "up") {
              return Effect.fail(new QueueError({ message: "NATS queue: extend failed: not connected (reconnecting)" }))
            }
            return Effect.try({
              try: () => {
                const now = Date.now()
                // A busy member's heads wait for no receive: handed back, another member may run them.
                const stale: Array<Held> = []
                for (const [account, lane] of heads) {
                  const left = lane.filter((head) => now - head.touched < keepAfterMs)
                  stale.push(...lane.filter((head) => now - head.touched >= keepAfterMs && now - head.touched < visibility))
                  if (left.length === 0) heads.delete(account)
                  else heads.set(account, left)
                }
                handBack(stale)
                const working: Array<string> = []
                for (const delivery of deliveries) {
                  const entry = given.get(delivery.receipt)
                  // Past its visibility the server may have handed it to another member, and a
                  // "working" does not say which delivery it is for: it would keep that one's.
                  if (entry === undefined || now - entry.touched >= visibility) continue
                  working.push(entry.reply)
                  entry.touched = now
                }
                tell(working, WORKING)
              },
              catch: (cause) => queueError("extend", cause)
            })
          })

        const ack = (deliveries: ReadonlyArray<QueueDelivery>) =>
          Effect.suspend(() => {
            // One ack per receipt: a message redelivered to this member holds one receipt (its stream
            // sequence), which the deliveries of it share.
            const entries = [...new Set(deliveries.map((delivery) => delivery.receipt))].flatMap((receipt) => {
              const entry = given.get(receipt)
              return entry === undefined ? [] : [{ receipt, reply: entry.reply }]
            })
            if (entries.length === 0) return Effect.void
            return call("ack", timeoutMs, () =>
              Promise.all(entries.map(async ({ receipt, reply }) => {
                // Confirmed: the server answers an ack sent as a request once it applied it.
                await nc.request(reply, ACK, { timeout: timeoutMs })
                given.delete(receipt)
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
