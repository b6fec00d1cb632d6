import { Effect, Layer, Metric, Option, type Tracer } from "effect"
import type { Job } from "../domain/job.js"
import { JobRepo } from "../ports/JobRepo.js"
import { inJobSpan, inSpan, rememberSubmitSpan, submitSpanOf } from "./jobSpans.js"
import { jobsAbandoned, jobsFinished, jobsSubmitted, pickupSeconds, runSeconds } from "./metrics.js"

type Repo = JobRepo["Type"]
type Outcome = "completed" | "failed" | "cancelled"

const submitted = (job: Job) =>
  Effect.zipRight(
    Effect.logInfo("job submitted", {
      jobId: job.id,
      accountId: job.accountId,
      model: job.model,
      version: job.version,
      costMicroCents: job.costMicroCents
    }),
    Metric.increment(Metric.tagged(jobsSubmitted, "model", job.model))
  )

/** A claim of a job: its first (pickup latency measured) or a take-over after a lost lease. */
const claimed = (job: Job) => {
  const first = job.attempts === 1 && job.startedAt !== null
  const pickupMs = first ? job.startedAt! - job.createdAt : undefined
  return Effect.zipRight(
    Effect.logInfo(first ? "job started" : "job resumed after a lost lease", {
      jobId: job.id,
      model: job.model,
      attempt: job.attempts,
      ...(pickupMs === undefined ? {} : { pickupMs })
    }),
    pickupMs === undefined ? Effect.void : Metric.update(Metric.tagged(pickupSeconds, "model", job.model), pickupMs / 1000)
  )
}

const finished = (job: Job, outcome: Outcome, refundedMicroCents: number) => {
  const runMs = outcome !== "cancelled" && job.startedAt !== null && job.completedAt !== null
    ? job.completedAt - job.startedAt
    : undefined
  const fields = {
    jobId: job.id,
    accountId: job.accountId,
    model: job.model,
    ...(runMs === undefined ? {} : { runMs }),
    ...(job.error === null ? {} : { code: job.error.code, error: job.error.message }),
    ...(refundedMicroCents > 0 ? { refundedMicroCents } : {})
  }
  const line = outcome === "completed"
    ? Effect.logInfo("job completed", fields)
    : outcome === "failed"
    ? Effect.logWarning("job failed", fields)
    : Effect.logInfo("job cancelled", fields)
  return Effect.all([
    line,
    refundedMicroCents > 0 ? Effect.logInfo("job refunded", { jobId: job.id, accountId: job.accountId, refundedMicroCents }) : Effect.void,
    Metric.increment(Metric.tagged(Metric.tagged(jobsFinished, "model", job.model), "outcome", outcome)),
    runMs === undefined
      ? Effect.void
      : Metric.update(Metric.tagged(Metric.tagged(runSeconds, "model", job.model), "outcome", outcome), runMs / 1000)
  ], { discard: true })
}

const linkToSubmits = (jobs: ReadonlyArray<Job>) =>
  Effect.ignore(Effect.map(Effect.currentSpan, (span) => {
    const links: Array<Tracer.SpanLink> = []
    for (const job of jobs) {
      const submit = submitSpanOf(job.id)
      if (submit !== undefined) links.push({ _tag: "SpanLink", span: submit, attributes: { "genjobs.job_id": job.id } })
    }
    span.attribute("genjobs.job_ids", jobs.map((job) => job.id))
    if (jobs.length === 1) span.attribute("genjobs.job_id", jobs[0]!.id)
    if (links.length > 0) span.addLinks(links)
  }))

/**
 * The store's JobRepo, observed: a log line, metrics and a span for each change of a job's
 * life (submitted, started, completed, failed with its code, cancelled, refunded, abandoned by
 * the reaper), from what the store answers, once the change committed. Reads pass through.
 */
export const observeJobRepo = (repo: Repo): Repo => ({
  ...repo,
  submit: (command) =>
    repo.submit(command).pipe(
      Effect.tap((outcome) =>
        outcome._tag === "Created"
          ? Effect.zipRight(
            Effect.ignore(Effect.map(Effect.currentSpan, (span) => rememberSubmitSpan(outcome.job.id, span))),
            submitted(outcome.job)
          )
          : Effect.logDebug("job submit replayed", { jobId: outcome.job.id })
      ),
      inSpan("genjobs.job.submit", {
        "genjobs.job_id": command.job.id,
        "genjobs.model": command.job.model,
        "genjobs.account_id": command.job.accountId
      })
    ),
  claim: (options) =>
    repo.claim(options).pipe(
      Effect.tap((job) => (Option.isSome(job) ? Effect.zipRight(linkToSubmits([job.value]), claimed(job.value)) : Effect.void)),
      inSpan("genjobs.job.claim", { "genjobs.worker_id": options.workerId }, { root: true })
    ),
  claimBatch: (options) =>
    repo.claimBatch(options).pipe(
      Effect.tap((jobs) => (jobs.length === 0 ? Effect.void : Effect.zipRight(linkToSubmits(jobs), Effect.forEach(jobs, claimed)))),
      inSpan("genjobs.job.claim", { "genjobs.worker_id": options.workerId }, { root: true })
    ),
  complete: (id, workerId, outputs, now) =>
    repo.complete(id, workerId, outputs, now).pipe(
      Effect.tap((job) => (Option.isSome(job) ? finished(job.value, "completed", 0) : Effect.void)),
      inJobSpan("genjobs.job.complete", id, { "genjobs.outputs": outputs.length })
    ),
  fail: (id, workerId, error, now) =>
    repo.fail(id, workerId, error, now).pipe(
      Effect.tap((job) => (Option.isSome(job) ? finished(job.value, "failed", job.value.costMicroCents) : Effect.void)),
      inJobSpan("genjobs.job.fail", id, { "genjobs.error_code": error.code })
    ),
  cancel: (id, accountId, now) =>
    repo.cancel(id, accountId, now).pipe(
      Effect.tap((outcome) => finished(outcome.job, "cancelled", outcome.refundedMicroCents)),
      inJobSpan("genjobs.job.cancel", id)
    ),
  reap: (options) =>
    repo.reap(options).pipe(
      Effect.tap((abandoned) =>
        abandoned === 0 ? Effect.void : Effect.zipRight(
          Effect.logWarning("jobs failed by the reaper: their last attempt's lease ran out; refunded", { count: abandoned }),
          Metric.incrementBy(jobsAbandoned, abandoned)
        )
      )
    )
})

/** The services' JobRepo, observed (see observeJobRepo); wraps the JobRepo in context. */
export const layerObservedJobRepo = Layer.effect(JobRepo, Effect.map(JobRepo, observeJobRepo))
