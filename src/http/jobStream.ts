import { HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Option, Queue, type Scope, Stream } from "effect"
import type { EngineError, StoreError } from "../domain/errors.js"
import { isTerminal, type Job } from "../domain/job.js"
import { type JobFollow, MAX_WAIT_SECONDS, statusRank } from "../services/JobFollow.js"
import { jobView } from "./views.js"

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

const HEARTBEAT_BYTES = encoder.encode(": heartbeat\n\n")

/**
 * Written first on every stream. Node sends a response's headers with its first body bytes, and
 * a stream resumed after the current status has no event to write until the job moves on: without
 * these bytes the client would see no answer at all until then (or the first heartbeat).
 */
const OPEN_BYTES = encoder.encode(": open\n\n")

/** The id of a job's last event, its terminal status: a stream resumed at it has nothing left to say. */
const FINAL_EVENT_ID = statusRank("completed")

/**
 * One timer for the heartbeats of every open stream, running only while any is open. A stream
 * joining between two beats gets its first one sooner than `interval`; after that, every
 * `interval`: no stream is ever silent longer.
 */
export const makeHeartbeats = (interval: Duration.DurationInput = HEARTBEAT) =>
  Effect.gen(function*() {
    const beats = new Set<() => void>()
    const beating = yield* Effect.makeLatch(false)
    yield* beating.await.pipe(
      Effect.zipRight(Effect.sleep(interval)),
      Effect.zipRight(Effect.sync(() => {
        if (beats.size === 0) beating.unsafeClose()
        for (const beat of beats) beat()
      })),
      Effect.forever,
      Effect.forkScoped
    )
    /** Calls `beat` every `interval` until the scope closes. */
    const add = (beat: () => void): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          beats.add(beat)
          beating.unsafeOpen()
        }),
        () => Effect.sync(() => beats.delete(beat))
      )
    return { add } as const
  })

export type Heartbeats = Effect.Effect.Success<ReturnType<typeof makeHeartbeats>>

/** What ends a stream: its final event was written, or a store error cut it short. */
type End = { readonly error: StoreError | undefined }

const respond = (events: Stream.Stream<Uint8Array>) =>
  HttpServerResponse.stream(Stream.concat(Stream.succeed(OPEN_BYTES), events), {
    contentType: "text/event-stream",
    // no-transform and X-Accel-Buffering keep proxies (nginx) from holding events back.
    headers: { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
  })

/**
 * The text/event-stream answer for `job` (as the handler read it, after taking `since` from
 * JobFollow.hintMark), resumed after the event `after` (Last-Event-ID): its opening comment at
 * once, then the events left. A job already terminal has at most its final event left, and a
 * client that saw the final event nothing: those end at once, with no watcher. Otherwise the
 * stream is a queue of bytes filled by the job's shared watch (JobFollow.listen, held by the
 * request's own scope until the response ends) and the process's heartbeat timer; the watcher
 * is added here, before the answer starts, so a refusal (too many watchers) is the usual JSON
 * error. A store failure mid-stream ends it: the client resumes with Last-Event-ID, as after
 * any dropped connection.
 */
export const eventStreamResponse = (
  follow: JobFollow["Type"],
  heartbeats: Heartbeats,
  job: Job,
  after: number,
  since: number
): Effect.Effect<HttpServerResponse.HttpServerResponse, EngineError, Scope.Scope> =>
  Effect.gen(function*() {
    if (after >= FINAL_EVENT_ID) return respond(Stream.empty)
    if (isTerminal(job.status)) return respond(Stream.succeed(eventOf(job)))
    const queue = yield* Queue.unbounded<Uint8Array | End>()
    const rank = statusRank(job.status)
    if (rank > after) Queue.unsafeOffer(queue, eventOf(job))
    yield* follow.listen(job.id, Math.max(rank, after), {
      onJob: (current) => Queue.unsafeOffer(queue, eventOf(current)),
      onEnd: (error) => Queue.unsafeOffer(queue, { error })
    }, since)
    yield* heartbeats.add(() => Queue.unsafeOffer(queue, HEARTBEAT_BYTES))
    return respond(Stream.repeatEffectOption(Effect.flatMap(Queue.take(queue), (item) => {
      if (item instanceof Uint8Array) return Effect.succeed(item)
      const ended = Effect.fail(Option.none())
      return item.error === undefined
        ? ended
        : Effect.zipRight(Effect.logWarning("job status stream ended by a store error", item.error), ended)
    })))
  })
