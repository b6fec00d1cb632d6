import { Duration, Effect, Equal, Latch } from "effect"
import { HttpServerResponse } from "effect/http"
import { Readable } from "node:stream"
import type { ServiceUnavailable, StoreError } from "../domain/errors.js"
import { isTerminal, type Job } from "../domain/job.js"
import type { QueuePlace } from "../domain/queuePosition.js"
import { type JobFollow, type JobListener, MAX_WAIT_SECONDS, statusRank, STREAMS_PER_TURN } from "../services/JobFollow.js"
import type { QueueBook } from "../services/QueueBook.js"
import type { LogLine } from "../domain/providerLogs.js"
import { jobLogLineView } from "./logViews.js"
import { jobView, queuePlaceView } from "./views.js"

/** Proxies and load balancers commonly drop connections idle for 30 to 60 seconds. */
const HEARTBEAT = Duration.seconds(15)

/** The status already seen, from Last-Event-ID; anything else starts from the beginning. */
export const readLastEventId = (header: string | undefined): number =>
  header !== undefined && /^\d{1,3}$/.test(header.trim()) ? Number(header.trim()) : 0

/** N of `Prefer: wait=N` (RFC 7240: preferences separated by commas), clamped to 60; undefined without one. */
export const readPreferWait = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined
  for (const preference of header.split(",")) {
    const match = /^\s*wait\s*=\s*"?(\d+)"?\s*(;.*)?$/i.exec(preference)
    if (match !== null) return Math.min(Number(match[1]), MAX_WAIT_SECONDS)
  }
  return undefined
}

export const preferenceApplied = (seconds: number) => ({ "preference-applied": `wait=${seconds}` })

const encoder = new TextEncoder()

/** Each read of a job is one object handed to all its streams: encoded once for them all. */
const encodedEvents = new WeakMap<Job, Uint8Array>()

const eventOf = (job: Job): Uint8Array => {
  let bytes = encodedEvents.get(job)
  if (bytes === undefined) {
    bytes = encoder.encode(`id: ${statusRank(job.status)}\ndata: ${JSON.stringify(jobView(job))}\n\n`)
    encodedEvents.set(job, bytes)
  }
  return bytes
}

/**
 * The job's provider progress rose while its status stayed: the job as GET answers it, without
 * an id (the stream's ids number its statuses, so Last-Event-ID stays the last status seen).
 */
const progressEventOf = (job: Job): Uint8Array => encoder.encode(`data: ${JSON.stringify(jobView(job))}\n\n`)

/** New provider log lines, one `log` event each, without an id: GET /v1/jobs/{jobId}/logs has them all. */
const logEventsOf = (lines: ReadonlyArray<LogLine>): Uint8Array =>
  encoder.encode(lines.map((line) => `event: log\ndata: ${JSON.stringify(jobLogLineView(line))}\n\n`).join(""))

const HEARTBEAT_BYTES = encoder.encode(": heartbeat\n\n")

/** What the heartbeats write on: a stream's body (the job's status stream, the changes stream). */
type Beating = Pick<Readable, "push">

/**
 * A pending job's place, as an event named `queue` with no id: clients listening for messages
 * only (EventSource's onmessage, the spec's) never see it, and Last-Event-ID keeps counting
 * statuses alone.
 */
const queueEventOf = (place: QueuePlace): Uint8Array =>
  encoder.encode(`event: queue\ndata: ${JSON.stringify(queuePlaceView(place))}\n\n`)

/**
 * Written first on every stream. Node sends a response's headers with its first body bytes, and
 * a stream resumed after the current status has no event to write until the job moves on: without
 * these bytes the client would see no answer at all until then (or the first heartbeat).
 */
export const OPEN_BYTES = encoder.encode(": open\n\n")

/** The id of a job's last event, its terminal status: a stream resumed at it has nothing left to say. */
const FINAL_EVENT_ID = statusRank("completed")

/**
 * One timer for the heartbeats of every open stream, running only while any is open. A stream
 * joining between two beats gets its first one sooner than `interval`; after that, every
 * `interval`: no stream is ever silent longer.
 */
export const makeHeartbeats = (interval: Duration.Input = HEARTBEAT) =>
  Effect.gen(function*() {
    const beats = new Set<Beating>()
    const beating = yield* Latch.make(false)
    // In slices, the event loop's turn between them: 10,000 heartbeats written in one go held
    // the loop for a few hundred milliseconds every interval, and events due meanwhile waited.
    const beatAll = Effect.fnUntraced(function*() {
      if (beats.size === 0) return beating.closeUnsafe()
      let written = 0
      for (const stream of [...beats]) {
        if (++written % STREAMS_PER_TURN === 0) yield* Effect.yieldNow
        // Gone during a turn given away: nothing more is written on it.
        if (beats.has(stream)) stream.push(HEARTBEAT_BYTES)
      }
    })
    yield* beating.await.pipe(
      Effect.andThen(Effect.sleep(interval)),
      Effect.andThen(beatAll()),
      Effect.forever,
      Effect.forkScoped
    )
    return {
      /** Writes a heartbeat on `stream` every `interval` until `remove`. */
      add: (stream: Beating) => {
        beats.add(stream)
        beating.openUnsafe()
      },
      remove: (stream: Beating) => void beats.delete(stream)
    } as const
  })

export type Heartbeats = Effect.Success<ReturnType<typeof makeHeartbeats>>

/**
 * A stream body its followers push bytes into: a status stream or a changes stream. It holds its
 * place among the heartbeat timer's streams and the function that gives back its place in what it
 * follows; both go when it stops, whichever comes first: its end (the followed thing ended, or a
 * store error: the client resumes with Last-Event-ID) or its destruction (the client left).
 */
export abstract class FollowerStream extends Readable {
  private leave: () => void = () => undefined
  protected stopped = false

  constructor(private readonly heartbeats: Heartbeats) {
    super()
    // Hashed by identity. When a client leaves mid-stream, the HTTP server folds the response
    // into the request's failure (Cause.combine), which hashes it, body included; Effect's Hash
    // walks any object without its own hash, and from a body piped into its response it walked
    // the socket, the server and every other connection: 10,000 clients leaving together took
    // half a minute of the server's CPU (docs/benchmarks.md).
    Equal.byReferenceUnsafe(this)
  }

  override _read() {
    // Bytes are pushed as what it follows moves; there is nothing to pull.
  }

  onEnd(_error?: StoreError) {
    this.stop()
    this.push(null)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.stop()
    callback(error)
  }

  /**
   * Takes the function that gives back its place in what it follows, once joined, and starts its
   * heartbeats. What it follows may have ended in between (the reader runs on a fiber of its
   * own): then the place is given back at once.
   */
  attach(leave: () => void) {
    if (this.stopped) return leave()
    this.leave = leave
    this.heartbeats.add(this)
  }

  /** What else a stream lets go of when it stops. */
  protected onStop() {}

  private stop() {
    if (this.stopped) return
    this.stopped = true
    this.heartbeats.remove(this)
    this.onStop()
    this.leave()
  }
}

/**
 * The body of one open status stream, and its job's listener: the job's shared watch (the one
 * reader fiber of JobFollow) and the heartbeat timer push its bytes, and the HTTP server sends
 * them (node:http pipes it into the response; a web handler's Response reads it as an async
 * iterable). No fiber, Stream, queue or scope of its own: a stream that waits costs this object
 * and its place in the watch. It leaves the watch when the job ends (then ends the body) or
 * when the body is destroyed (the client left: node:http destroys a piped source whose response
 * closed, a web Response cancels it).
 */
class EventStream extends FollowerStream implements JobListener {
  private unwatchQueue: () => void = () => undefined

  readonly progressFrom: number | undefined
  readonly logFrom: number

  /** `job` as the stream's own read found it: progress and lines after it are new to this client. */
  constructor(heartbeats: Heartbeats, job: Job) {
    super(heartbeats)
    this.progressFrom = job.providerProgress
    this.logFrom = job.providerLog?.lines ?? 0
  }

  onJob(job: Job) {
    // Past pending, the job has no place left to tell.
    if (job.status !== "pending") this.unwatchQueue()
    this.push(eventOf(job))
  }

  /** Pushes the job's new place (QueueBook calls it at most once per refresh). */
  readonly onPlace = (place: QueuePlace) => {
    this.push(queueEventOf(place))
  }

  /** Takes the function that stops the job's place updates; called at once if the stream already stopped. */
  watchQueue(unwatch: () => void) {
    if (this.stopped) return unwatch()
    this.unwatchQueue = unwatch
  }

  onProgress(job: Job) {
    this.push(progressEventOf(job))
  }

  onLogs(lines: ReadonlyArray<LogLine>) {
    this.push(logEventsOf(lines))
  }

  protected override onStop() {
    this.unwatchQueue()
  }
}

// no-transform and X-Accel-Buffering keep proxies (nginx) from holding events back.
export const STREAM_HEADERS = { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }

const respondWith = (bytes: ReadonlyArray<Uint8Array>) => {
  const body = new Uint8Array(bytes.reduce((length, part) => length + part.length, 0))
  let offset = 0
  for (const part of bytes) {
    body.set(part, offset)
    offset += part.length
  }
  return HttpServerResponse.uint8Array(body, { contentType: "text/event-stream", headers: STREAM_HEADERS })
}

/**
 * The text/event-stream answer for `job` (as the handler read it, after taking `since` from
 * JobFollow.hintMark), resumed after the event `after` (Last-Event-ID): its opening comment at
 * once, then the events left. A job already terminal has at most its final event left, and a
 * client that saw the final event nothing: those are answered whole, with no watcher. Otherwise
 * the body is an EventStream joined to the job's shared watch before the answer starts, so a
 * refusal (too many watchers) is the usual JSON error. A pending job's stream also tells its place
 * in the queue (`queue`: the place when it opens, then each change QueueBook finds) until it starts.
 */
export const eventStreamResponse = (
  follow: JobFollow["Service"],
  heartbeats: Heartbeats,
  job: Job,
  after: number,
  since: number,
  queue?: { readonly book: QueueBook["Service"]; readonly place: QueuePlace | null | undefined }
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServiceUnavailable> => {
  if (after >= FINAL_EVENT_ID) return Effect.succeed(respondWith([OPEN_BYTES]))
  if (isTerminal(job.status)) return Effect.succeed(respondWith([OPEN_BYTES, eventOf(job)]))
  return Effect.suspend(() => {
    const stream = new EventStream(heartbeats, job)
    stream.push(OPEN_BYTES)
    const rank = statusRank(job.status)
    if (rank > after) stream.push(eventOf(job))
    // Places go to a client that has not seen the job start (a resume after processing has).
    const book = job.status === "pending" && after < statusRank("processing") ? queue?.book : undefined
    const place = book === undefined ? undefined : queue?.place ?? undefined
    if (place !== undefined) stream.push(queueEventOf(place))
    return Effect.map(follow.join(job.id, Math.max(rank, after), stream, since), (leave) => {
      stream.attach(leave)
      if (book !== undefined) stream.watchQueue(book.watch(job, stream.onPlace, place))
      return HttpServerResponse.raw(stream, { contentType: "text/event-stream", headers: STREAM_HEADERS })
    })
  })
}
