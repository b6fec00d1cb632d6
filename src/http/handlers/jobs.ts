import { Clock, Effect } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { RequestId } from "../../domain/ids.js"
import type { Job } from "../../domain/job.js"
import { JobFollow } from "../../services/JobFollow.js"
import { Jobs } from "../../services/Jobs.js"
import { QueueBook } from "../../services/QueueBook.js"
import { get as getJob } from "../../services/jobs/reads.js"
import { EngineApi } from "../Api.js"
import { deprecationHeaders } from "../deprecationHeaders.js"
import { CurrentCaller } from "../middleware.js"
import { CurrentRequestId } from "../requestContext.js"
import { eventStreamResponse, makeHeartbeats, preferenceApplied, readLastEventId, readPreferWait } from "../jobStream.js"
import { jobListItem, jobView, submitView } from "../views.js"
import { jobLogPageView } from "../logViews.js"

/**
 * The answer's value, with headers the protocol adds (Deprecation/Sunset, Idempotent-Replayed,
 * Preference-Applied) set on the response its success schema encodes.
 */
const withHeaders = <A>(headers: Record<string, string>, value: A) =>
  Object.keys(headers).length === 0
    ? Effect.succeed(value)
    : Effect.as(HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers))), value)

export const JobsHandlers = HttpApiBuilder.group(EngineApi, "jobs", (handlers) =>
  Effect.gen(function*() {
    const jobs = yield* Jobs
    const follow = yield* JobFollow
    const heartbeats = yield* makeHeartbeats()
    const book = yield* QueueBook
    // A pending job's place; the job is answered without it (null) when the queue cannot be read.
    const queueOf = (job: Job) =>
      job.status !== "pending" ? Effect.succeed(undefined) : book.place(job).pipe(
        Effect.map((place) => place ?? null),
        Effect.catch((error) => Effect.as(Effect.logWarning("a queue place was not read", error), null))
      )
    // A watcher's own read of its job goes with the other watchers' opens, many to a statement
    // (a dashboard opening a stream per job); a plain GET reads on its own.
    const getWatchedJob = getJob({ repo: { get: follow.readForWatch } })
    return handlers
      .handle("submit", ({ headers, payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const requestId = RequestId.make(yield* CurrentRequestId)
          const since = yield* follow.hintMark
          const result = yield* jobs.submit(caller, {
            model: payload.model ?? payload.modelSlug ?? "",
            version: payload.version ?? payload.modelVersion,
            input: payload.input,
            webhookUrl: payload.webhookUrl
          }, requestId, headers["idempotency-key"])
          const extra: Record<string, string> = deprecationHeaders(result, yield* Clock.currentTimeMillis)
          if (result.replayed) extra["idempotent-replayed"] = "true"
          const wait = readPreferWait(headers.prefer)
          if (wait === undefined) return yield* withHeaders(extra, submitView(result.job))
          // A long-poll answers the job as it now is beside the submit's own fields.
          const job = yield* follow.awaitTerminal(result.job, wait, since)
          return yield* withHeaders({ ...extra, ...preferenceApplied(wait) }, { ...submitView(job), ...jobView(job) })
        }))
      .handle("estimate", ({ payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const { estimate, ...version } = yield* jobs.estimate(caller, {
            model: payload.model ?? payload.modelSlug ?? "",
            version: payload.version ?? payload.modelVersion,
            input: payload.input
          })
          return yield* withHeaders(deprecationHeaders(version, yield* Clock.currentTimeMillis), estimate)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const page = yield* jobs.list(yield* CurrentCaller, query)
          return { jobs: page.jobs.map(jobListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          // Read off the request rather than declared: a declared header would become a required
          // argument of every typed client's get.
          const wait = readPreferWait((yield* HttpServerRequest.HttpServerRequest).headers["prefer"])
          if (wait === undefined) {
            const job = yield* jobs.get(yield* CurrentCaller, params.jobId)
            return jobView(job, yield* queueOf(job))
          }
          // Taken before the read: a change the read misses is caught by its hint (JobFollow.add).
          const since = yield* follow.hintMark
          const job = yield* getWatchedJob(yield* CurrentCaller, params.jobId)
          const waited = yield* follow.awaitTerminal(job, wait, since)
          return yield* withHeaders(preferenceApplied(wait), jobView(waited, yield* queueOf(waited)))
        }))
      .handle("events", ({ headers, params }) =>
        Effect.gen(function*() {
          const since = yield* follow.hintMark
          // Checked before the stream starts, so a refusal is the usual JSON error.
          const job = yield* getWatchedJob(yield* CurrentCaller, params.jobId)
          return yield* eventStreamResponse(follow, heartbeats, job, readLastEventId(headers["last-event-id"]), since, {
            book,
            place: yield* queueOf(job)
          })
        }))
      .handle("logs", ({ params, query }) =>
        Effect.map(Effect.flatMap(CurrentCaller, (caller) => jobs.logs(caller, params.jobId, query)), jobLogPageView))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const outcome = yield* jobs.cancel(yield* CurrentCaller, params.jobId)
          return { jobId: outcome.job.id, status: "cancelled" as const, refundedMicroCents: outcome.refundedMicroCents }
        }))
  }))
