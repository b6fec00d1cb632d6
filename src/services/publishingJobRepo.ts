import { Effect, Layer, Option } from "effect"
import type { JobId } from "../domain/ids.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"

/**
 * The store's JobRepo, publishing a hint for each job whose status a call changed, once the
 * call returned (its transaction committed): followers re-read the job, so a hint must never
 * come before the change is visible. The reaper's abandonments carry no ids back, so a pass
 * that failed any hints every followed job (passes that fail nothing, nearly all, send
 * nothing). Claims' and endings' hints go only where someone follows jobs (`publishIfFollowed`:
 * on PostgreSQL nothing is sent in a drain nobody watches); a cancel's always (the job's
 * provider poller acts on it). A submit publishes nothing: nobody can follow a job before its
 * id is answered, and on PostgreSQL each hint is a round trip on the submit path.
 */
export const layerPublishingJobRepo = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const events = yield* JobEvents
    // Claims' and endings' hints are published by one long-lived fiber of the engine's scope,
    // many calls' at once when they come faster than it publishes: its shutdown interrupts it, a
    // caller's interruption does not, and a call costs no fiber of its own. The hints left when
    // the scope closes go out then, so a follower elsewhere still hears of the last endings.
    const unpublished: Array<JobId> = []
    yield* Effect.addFinalizer(() => Effect.suspend(() => (unpublished.length === 0 ? Effect.void : events.publishIfFollowed(unpublished.splice(0)))))
    let wake: (() => void) | undefined
    const nextHints = Effect.callback<Array<JobId>>((resume) => {
      const take = () => {
        wake = undefined
        resume(Effect.succeed(unpublished.splice(0)))
      }
      if (unpublished.length > 0) return take()
      wake = take
      return Effect.sync(() => {
        wake = undefined
      })
    })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(nextHints, events.publishIfFollowed)))
    const beside = (ids: ReadonlyArray<JobId>) =>
      Effect.sync(() => {
        if (ids.length === 0) return
        unpublished.push(...ids)
        wake?.()
      })
    const publishSomeBeside = <A extends { readonly id: JobId }>(found: Option.Option<A>) => beside(Option.isSome(found) ? [found.value.id] : [])
    return JobRepo.of({
      ...repo,
      cancel: (id, accountId, now) => Effect.tap(repo.cancel(id, accountId, now), (outcome) => events.publish([outcome.job.id])),
      // Claims' and endings' hints go out beside the run rather than in its way: on PostgreSQL
      // each is a round trip, and neither the claimed jobs' provider starts nor the next claim
      // for a fiber whose job ended need wait for it. An ending that waited for its hint kept
      // its worker fiber, and the claims of 8,000 drained jobs came smaller and more often:
      // docs/benchmarks.md, "PostgreSQL drain: the worker's CPU per job".
      claim: (options) => Effect.tap(repo.claim(options), publishSomeBeside),
      claimBatch: (options) => Effect.tap(repo.claimBatch(options), (jobs) => beside(jobs.map((job) => job.id))),
      claimIds: (ids, options) => Effect.tap(repo.claimIds(ids, options), (jobs) => beside(jobs.map((job) => job.id))),
      complete: (id, workerId, outputs, now, route) => Effect.tap(repo.complete(id, workerId, outputs, now, route), publishSomeBeside),
      fail: (id, workerId, error, now, route) => Effect.tap(repo.fail(id, workerId, error, now, route), publishSomeBeside),
      // A job put back in the queue is pending again: its followers hear of it as of a claim.
      ...(repo.returnUnstarted === undefined
        ? {}
        : { returnUnstarted: (leases) => Effect.tap(repo.returnUnstarted!(leases), beside) }),
      reap: (options) => Effect.tap(repo.reap(options), (failed) => (failed > 0 ? events.publishAll : Effect.void))
    })
  })
)
