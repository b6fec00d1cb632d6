import { Clock, Effect, Fiber, Layer, LogLevel, Metric, Option, References } from "effect"
import type { JobId } from "../domain/ids.js"
import type { Job } from "../domain/job.js"
import { JobRepo } from "../ports/JobRepo.js"
import { exporting, inJobSpan, inSpan, recordJobSpan, rememberSubmitSpan } from "./jobSpans.js"
import { ABANDONED } from "../services/jobRepo/passes.js"
import { jobsFailedOf, jobsFinishedOf, jobsSubmittedOf, pickupSecondsOf, runSecondsOf } from "./metricSeries.js"
import { jobsAbandoned } from "./metrics.js"

type Repo = JobRepo["Service"]
type Outcome = "completed" | "failed" | "cancelled"

const MS = 1_000_000n

const submitted = (job: Job) =>
  Effect.andThen(
    Effect.logInfo("job submitted", {
      jobId: job.id,
      accountId: job.accountId,
      model: job.model,
      version: job.version,
      costMicroCents: job.costMicroCents
    }),
    Metric.update(jobsSubmittedOf(job.model), 1)
  )

/**
 * Whether a line at `level` is written in this fiber. Checked before a per-job line's fields are
 * built: at the usual Warn level an ending or a claim builds no line at all.
 */
const logs = (fiber: Fiber.Fiber<unknown, unknown>, level: LogLevel.LogLevel) =>
  !LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), level)

/** A claim of a job: its first (pickup latency measured) or a take-over after a lost lease. Its line only when Info is logged. */
const claimedNow = (fiber: Fiber.Fiber<unknown, unknown>, job: Job): Effect.Effect<void> | undefined => {
  const first = job.attempts === 1 && job.startedAt !== null
  const pickupMs = first ? job.startedAt! - job.createdAt : undefined
  if (pickupMs !== undefined) pickupSecondsOf(job.model).updateUnsafe(pickupMs / 1000, fiber.context)
  return logs(fiber, "Info")
    ? Effect.logInfo(first ? "job started" : "job resumed after a lost lease", {
      jobId: job.id,
      model: job.model,
      attempt: job.attempts,
      ...(pickupMs === undefined ? {} : { pickupMs })
    })
    : undefined
}

/** The claims of `jobs`, counted and logged in one step (a claim takes up to a hundred). */
const claimed = (jobs: ReadonlyArray<Job>): Effect.Effect<void> =>
  jobs.length === 0 ? Effect.void : Effect.withFiber((fiber) => {
    const lines: Array<Effect.Effect<void>> = []
    for (const job of jobs) {
      const line = claimedNow(fiber, job)
      if (line !== undefined) lines.push(line)
    }
    return lines.length === 0 ? Effect.void : Effect.all(lines, { discard: true })
  })

/**
 * A job handed at its submit to an idle worker of the process (LocalWorkers): the submit's
 * write was its claim, so its pickup is logged, and its queued and claim spans recorded, here.
 */
const handedOff = (job: Job, submitStart: bigint) =>
  Effect.flatMap(Clock.currentTimeNanos, (end) =>
    Effect.all([
      recordJobSpan("genjobs.job.queued", job.id, BigInt(job.createdAt) * MS, BigInt(job.startedAt ?? job.createdAt) * MS),
      recordJobSpan("genjobs.job.claim", job.id, submitStart, end, {
        "genjobs.worker_id": job.leaseOwner,
        "genjobs.attempt": job.attempts,
        "genjobs.claimed_together": 1,
        "genjobs.handed_off": true
      }),
      claimed([job])
    ], { discard: true }))

/**
 * An ending, counted in `fiber`: the metrics are updated in place; its log lines (and their
 * fields) are built only when their level is logged, and answered to be run (undefined: none).
 */
const finishedIn = (fiber: Fiber.Fiber<unknown, unknown>, job: Job, outcome: Outcome, refundedMicroCents: number): Effect.Effect<void> | undefined => {
  const runMs = outcome !== "cancelled" && job.startedAt !== null && job.completedAt !== null
    ? job.completedAt - job.startedAt
    : undefined
  jobsFinishedOf(job.model, outcome).updateUnsafe(1, fiber.context)
  if (job.error !== null && outcome === "failed") jobsFailedOf(job.error.type, String(job.error.retryable)).updateUnsafe(1, fiber.context)
  if (runMs !== undefined) runSecondsOf(job.model, outcome).updateUnsafe(runMs / 1000, fiber.context)
  const level = outcome === "failed" ? "Warn" : "Info"
  const line = logs(fiber, level)
    ? Effect.logWithLevel(level)(outcome === "completed" ? "job completed" : outcome === "failed" ? "job failed" : "job cancelled", {
      jobId: job.id,
      accountId: job.accountId,
      model: job.model,
      ...(runMs === undefined ? {} : { runMs }),
      ...(job.error === null ? {} : { code: job.error.code, type: job.error.type, retryable: job.error.retryable, error: job.error.message }),
      ...(refundedMicroCents > 0 ? { refundedMicroCents } : {})
    })
    : undefined
  return refundedMicroCents > 0 && logs(fiber, "Info")
    ? Effect.andThen(line ?? Effect.void, Effect.logInfo("job refunded", { jobId: job.id, accountId: job.accountId, refundedMicroCents }))
    : line
}

/** An ending, counted and logged in one step. */
const finished = (job: Job, outcome: Outcome, refundedMicroCents: number): Effect.Effect<void> =>
  Effect.withFiber((fiber) => finishedIn(fiber, job, outcome, refundedMicroCents) ?? Effect.void)

/**
 * A worker's ending as the store answered it, counted and logged in the answer's own
 * continuation (the running fiber's): without a line to write, the answer goes on in one step
 * more than the write's. None (the write found nothing to end): counted only if it was this
 * ending's own commit, whose answer was lost (endedBy).
 */
const endingCounted = (
  answer: Option.Option<Job>,
  outcome: "completed" | "failed",
  refundedMicroCents: (job: Job) => number,
  ours: Effect.Effect<Option.Option<Job>>
): Effect.Effect<Option.Option<Job>> => {
  if (Option.isNone(answer)) {
    return Effect.as(Effect.flatMap(ours, Option.match({ onNone: () => Effect.void, onSome: (stored) => finished(stored, outcome, refundedMicroCents(stored)) })), answer)
  }
  // A continuation runs in the fiber that runs it: the current one.
  const line = finishedIn(Fiber.getCurrent()!, answer.value, outcome, refundedMicroCents(answer.value))
  return line === undefined ? Effect.succeed(answer) : Effect.as(line, answer)
}

const noRefund = () => 0
const fullRefund = (job: Job) => job.costMicroCents

const sameUrls = (a: ReadonlyArray<{ readonly url: string }>, b: ReadonlyArray<{ readonly url: string }>) =>
  a.length === b.length && a.every((o, i) => o.url === b[i]!.url)

/**
 * The job as this ending left it, when a write that found nothing to end (the job no longer held)
 * was this ending's own, committed by an earlier try whose answer was lost (a connection cut
 * after COMMIT, a batch written again item by item): the worker's retry then finds the job
 * already ended. Completed with exactly these outputs (whose keys name this run's attempt), or
 * failed with this error (the lease is released on any end, so the error is what tells), it is
 * this ending's commit, so its line is written now, once: the try that committed logged nothing,
 * as it failed.
 */
const endedBy = (repo: Repo, id: JobId, matches: (job: Job) => boolean) =>
  // Suspended: the read (and its statement) is built only when an ending found nothing to end,
  // not for every ending that passes it along (it was 3 % of a draining worker's CPU).
  Effect.suspend(() => repo.get(id)).pipe(
    Effect.map(Option.filter(matches)),
    // A read that fails costs the line only, never the write's own answer.
    Effect.orElseSucceed(() => Option.none<Job>())
  )

/**
 * A claim's jobs are known once it returns, and most claims of an idle queue return none: each
 * claimed job gets its spans afterwards, in its own trace (the wait in the queue on its first
 * claim, then the claim itself), and empty claims get none.
 */
const claimSpans = (workerId: string) => <E, R>(claim: Effect.Effect<ReadonlyArray<Job>, E, R>) =>
  Effect.flatMap(Clock.currentTimeNanos, (start) =>
    Effect.tap(claim, (claimed) =>
      Effect.flatMap(Clock.currentTimeNanos, (end) =>
        Effect.forEach(claimed, (job) =>
          Effect.andThen(
            job.attempts === 1 && job.startedAt !== null
              ? recordJobSpan("genjobs.job.queued", job.id, BigInt(job.createdAt) * MS, BigInt(job.startedAt) * MS)
              : Effect.void,
            recordJobSpan("genjobs.job.claim", job.id, start, end, {
              "genjobs.worker_id": workerId,
              "genjobs.attempt": job.attempts,
              "genjobs.claimed_together": claimed.length
            })
          ), { discard: true }))))

/**
 * The store's JobRepo, observed: a log line, metrics and a span for each change of a job's
 * life (submitted, started, completed, failed with its code, cancelled, refunded, abandoned by
 * the reaper), from what the store answers, once the change committed. Reads pass through.
 */
export const observeJobRepo = (repo: Repo, spans = true): Repo => {
  const claimSpansOf: typeof claimSpans = spans ? claimSpans : () => (claim) => claim
  const jobSpan: typeof inJobSpan = spans ? inJobSpan : () => (effect) => effect
  return {
  ...repo,
  submit: (command) =>
    Effect.flatMap(Clock.currentTimeNanos, (start) => repo.submit(command).pipe(
      Effect.tap((outcome) =>
        outcome._tag === "Created"
          ? Effect.andThen(
            // Remembered only when spans are exported: without that the job's later spans are not made.
            spans ? Effect.ignore(Effect.map(Effect.currentSpan, (span) => rememberSubmitSpan(outcome.job.id, span))) : Effect.void,
            Effect.andThen(submitted(outcome.job), outcome.job.status === "processing" ? handedOff(outcome.job, start) : Effect.void)
          )
          : Effect.logDebug("job submit replayed", { jobId: outcome.job.id })
      ),
      inSpan("genjobs.job.submit", {
        "genjobs.job_id": command.job.id,
        "genjobs.model": command.job.model,
        "genjobs.account_id": command.job.accountId
      })
    )),
  claim: (options) =>
    repo.claim(options).pipe(
      Effect.map(Option.toArray),
      claimSpansOf(options.workerId),
      Effect.tap(claimed),
      Effect.map((jobs) => Option.fromNullishOr(jobs[0]))
    ),
  claimBatch: (options) =>
    repo.claimBatch(options).pipe(
      claimSpansOf(options.workerId),
      Effect.tap(claimed)
    ),
  claimIds: (ids, options) =>
    repo.claimIds(ids, options).pipe(
      claimSpansOf(options.workerId),
      Effect.tap(claimed)
    ),
  complete: (id, workerId, outputs, now, route) =>
    repo.complete(id, workerId, outputs, now, route).pipe(
      Effect.flatMap((job) =>
        endingCounted(
          job,
          "completed",
          noRefund,
          endedBy(repo, id, (stored) => stored.status === "completed" && stored.outputs !== null && sameUrls(stored.outputs, outputs))
        )
      ),
      jobSpan("genjobs.job.complete", id, { "genjobs.outputs": outputs.length })
    ),
  fail: (id, workerId, error, now, route) =>
    repo.fail(id, workerId, error, now, route).pipe(
      Effect.flatMap((job) =>
        endingCounted(
          job,
          "failed",
          fullRefund,
          endedBy(repo, id, (stored) => stored.status === "failed" && stored.error?.code === error.code && stored.error.message === error.message)
        )
      ),
      jobSpan("genjobs.job.fail", id, { "genjobs.error_code": error.code })
    ),
  cancel: (id, accountId, now) =>
    repo.cancel(id, accountId, now).pipe(
      Effect.tap((outcome) => finished(outcome.job, "cancelled", outcome.refundedMicroCents)),
      jobSpan("genjobs.job.cancel", id)
    ),
  reap: (options) =>
    repo.reap(options).pipe(
      Effect.tap((abandoned) =>
        abandoned === 0 ? Effect.void : Effect.andThen(
          Effect.logWarning("jobs failed by the reaper: their last attempt's lease ran out; refunded", { count: abandoned }),
          Effect.all([
            Metric.update(jobsAbandoned, abandoned),
            Metric.update(jobsFailedOf(ABANDONED.type, String(ABANDONED.retryable)), abandoned)
          ], { discard: true })
        )
      )
    )
  }
}

/**
 * The services' JobRepo, observed (see observeJobRepo); wraps the JobRepo in context. Whether
 * its changes get spans is decided once, as the engine is built: without a tracer that exports,
 * a claim or an ending checks for none.
 */
export const layerObservedJobRepo = Layer.effect(JobRepo, Effect.zipWith(JobRepo, exporting, observeJobRepo))
