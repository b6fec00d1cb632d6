import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef } from "effect"
import { RequestId } from "../../domain/ids.js"
import { Jobs } from "../../services/Jobs.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller } from "../middleware.js"
import { CurrentRequestId, toApiFailure } from "../requestContext.js"
import { jobListItem, jobView, submitView } from "../views.js"

export const JobsHandlers = HttpApiBuilder.group(EngineApi, "jobs", (handlers) =>
  Effect.gen(function*() {
    const jobs = yield* Jobs
    return handlers
      .handle("submit", ({ headers, payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const requestId = RequestId.make(yield* FiberRef.get(CurrentRequestId))
          const result = yield* jobs.submit(caller, {
            model: payload.model ?? payload.modelSlug ?? "",
            version: payload.version ?? payload.modelVersion,
            input: payload.input,
            webhookUrl: payload.webhookUrl
          }, requestId, headers["idempotency-key"])
          const extra: Record<string, string> = {}
          if (result.deprecated) extra["deprecation"] = "true"
          if (result.replayed) extra["idempotent-replayed"] = "true"
          return HttpServerResponse.unsafeJson(submitView(result.job), { headers: extra })
        }).pipe(toApiFailure))
      .handle("estimate", ({ payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const { deprecated, estimate } = yield* jobs.estimate(caller, {
            model: payload.model ?? payload.modelSlug ?? "",
            version: payload.version ?? payload.modelVersion,
            input: payload.input
          })
          return HttpServerResponse.unsafeJson(estimate, { headers: deprecated ? { deprecation: "true" } : {} })
        }).pipe(toApiFailure))
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const page = yield* jobs.list(yield* CurrentCaller, urlParams)
          return { jobs: page.jobs.map(jobListItem), nextCursor: page.nextCursor, hasMore: page.hasMore }
        }).pipe(toApiFailure))
      .handle("get", ({ path }) =>
        Effect.gen(function*() {
          return jobView(yield* jobs.get(yield* CurrentCaller, path.jobId))
        }).pipe(toApiFailure))
      .handle("cancel", ({ path }) =>
        Effect.gen(function*() {
          const outcome = yield* jobs.cancel(yield* CurrentCaller, path.jobId)
          return { jobId: outcome.job.id, status: "cancelled" as const, refundedMicroCents: outcome.refundedMicroCents }
        }).pipe(toApiFailure))
  }))
