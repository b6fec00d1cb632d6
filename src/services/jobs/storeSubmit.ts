import { Effect, Option } from "effect"
import { PubsubPublishFailed, retryLater, storeBusyOf, type StoreError } from "../../domain/errors.js"
import type { Job } from "../../domain/job.js"
import type { SubmitCommand, SubmitOutcome, SubmitRefusal } from "../../ports/JobRepo.js"
import type { JobsDeps } from "./deps.js"

/** A submit as the store answered it: `taken` by a local worker at once, or `found` after a lost answer. */
export interface StoredSubmit {
  readonly outcome: SubmitOutcome
  readonly taken: boolean
  readonly found: boolean
}

/**
 * Queues a stored job: wakes this store's claimers (unless the store's write did, `woken`), and
 * publishes it to the broker when there is one, in its account's lane with the account's
 * fair-share `weight`. A publish that fails leaves the job stored and charged: the queue relay
 * publishes it once it has waited `queueRelayGraceMs`, so the submit still succeeds.
 */
export const enqueue = ({ queue, signal }: Pick<JobsDeps, "queue" | "signal">, job: Job, weight: number, woken = false): Effect.Effect<void> =>
  Effect.andThen(
    woken ? Effect.void : signal.notify,
    Option.isNone(queue) ? Effect.void : queue.value.publish([{ jobId: job.id, accountId: job.accountId, weight }]).pipe(
      Effect.catch((error) =>
        Effect.logWarning("a submitted job could not be published to the queue; the relay publishes it later", { jobId: job.id }, error.message)
      )
    )
  )

/**
 * The store failed the submit, but a failure can come after the commit (the connection lost
 * with the commit's answer on its way): the job is looked up by its id before the client is
 * told anything. Stored, it was admitted and charged, and is answered as created; absent,
 * nothing was charged and the store's failure stands; when the store cannot even say, the
 * answer names the job's id so the client can look before it retries. A shed submit never
 * reached the store (it got no connection), so nothing is looked up: the shed stands.
 */
const confirmStored = (
  { repo }: Pick<JobsDeps, "repo">,
  job: Job,
  failure: StoreError
): Effect.Effect<SubmitOutcome, PubsubPublishFailed | StoreError> =>
  repo.get(job.id).pipe(
    Effect.catchTag("StoreError", (lookup) => {
      const answer = retryLater(PubsubPublishFailed, lookup, { jobId: job.id })
      return Effect.logError("submit could not be stored, nor its job looked up", { jobId: job.id }, failure, lookup).pipe(
        Effect.andThen(Effect.fail(new PubsubPublishFailed({
          message:
            "The store failed while queuing the job and could not say whether it was queued: GET the job by its jobId before retrying, or retry with the same Idempotency-Key",
          details: answer.details,
          retryAfterSeconds: answer.retryAfterSeconds
        })))
      )
    }),
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(failure),
      onSome: (stored) =>
        Effect.as(
          Effect.logWarning("submit's store answer was lost after its commit; the job was found stored", { jobId: job.id }),
          { _tag: "Created", job: stored } satisfies SubmitOutcome
        )
    }))
  )

/**
 * The submit, offered to an idle worker of this process: one is reserved first, the store
 * writes the job as that worker's claim when nothing older is runnable, and the worker runs it
 * at once; otherwise the worker is given back. Uninterruptible, so neither a reserved worker
 * nor a written claim is left behind.
 */
export const storeSubmit = (
  deps: Pick<JobsDeps, "repo" | "localWorkers">,
  command: SubmitCommand
): Effect.Effect<StoredSubmit, SubmitRefusal | PubsubPublishFailed | StoreError> =>
  Effect.uninterruptible(Effect.gen(function*() {
    const slot = yield* deps.localWorkers.reserve(command.job)
    const released = Option.isSome(slot) ? slot.value.release : Effect.void
    const handOff = Option.isSome(slot) ? slot.value.lease : undefined
    const { found, outcome } = yield* deps.repo.submit({ ...command, handOff }).pipe(
      Effect.map((outcome) => ({ outcome, found: false })),
      Effect.catchTag("StoreError", (error) =>
        storeBusyOf(error) === undefined
          ? Effect.map(confirmStored(deps, command.job, error), (outcome) => ({ outcome, found: true }))
          : Effect.fail(error)),
      Effect.onError(() => released)
    )
    // A job found after a lost answer is never run here: another fiber of this process may
    // hold it under the same owner. Handed off, it waits out its lease and is taken over.
    const taken = !found && outcome._tag === "Created" && outcome.job.status === "processing"
    if (Option.isSome(slot)) yield* (taken ? slot.value.run(outcome.job) : released)
    return { outcome, taken, found }
  }))
