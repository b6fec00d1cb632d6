import { HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Schedule, Stream } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { Job } from "../domain/job.js"
import { MAX_WAIT_SECONDS, statusRank } from "../services/JobFollow.js"
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

const eventOf = (job: Job) => `id: ${statusRank(job.status)}\ndata: ${JSON.stringify(jobView(job))}\n\n`

/**
 * The text/event-stream answer of a followed job. A store failure mid-stream ends it: the
 * client resumes with Last-Event-ID, as after any dropped connection.
 */
export const eventStreamResponse = (jobs: Stream.Stream<Job, StoreError>) => {
  const events = jobs.pipe(
    Stream.map(eventOf),
    Stream.catchAll((error) => Stream.execute(Effect.logWarning("job status stream ended by a store error", error)))
  )
  const heartbeats = Stream.fromSchedule(Schedule.spaced(HEARTBEAT)).pipe(Stream.as(": heartbeat\n\n"))
  return HttpServerResponse.stream(
    Stream.merge(events, heartbeats, { haltStrategy: "left" }).pipe(Stream.encodeText),
    {
      contentType: "text/event-stream",
      // no-transform and X-Accel-Buffering keep proxies (nginx) from holding events back.
      headers: { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
    }
  )
}
