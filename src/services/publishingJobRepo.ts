import { Effect, Layer, Option } from "effect"
import type { JobId } from "../domain/ids.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"

/**
 * The store's JobRepo, publishing a hint for each job whose status a call changed, once the
 * call returned (its transaction committed): followers re-read the job, so a hint must never
 * come before the change is visible. The reaper's abandonments carry no ids back, so a pass
 * that failed any hints every followed job (passes that fail nothing, nearly all, send
 * nothing). A submit publishes nothing: nobody can follow a job before its
 * id is answered, and on PostgreSQL each hint is a round trip on the submit path.
 */
export const layerPublishingJobRepo = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const events = yield* JobEvents
    // Claims' hints are published by one long-lived fiber of the engine's scope, many claims'
    // at once when they come faster than it publishes: its shutdown interrupts it, a claimer's
    // interruption does not, and a claim costs no fiber of its own.
    const unpublished: Array<JobId> = []
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
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(nextHints, events.publish)))
    const beside = (ids: ReadonlyArray<JobId>) =>
      Effect.sync(() => {
        if (ids.length === 0) return
        unpublished.push(...ids)
        wake?.()
      })
    const publishSomeBeside = <A extends { readonly id: JobId }>(found: Option.Option<A>) => beside(Option.isSome(found) ? [found.value.id] : [])
    const publishSome = <A extends { readonly id: JobId }>(found: Option.Option<A>) =>
      Option.isSome(found) ? events.publish([found.value.id]) : Effect.void
    return JobRepo.of({
      ...repo,
      cancel: (id, accountId, now) => Effect.tap(repo.cancel(id, accountId, now), (outcome) => events.publish([outcome.job.id])),
      // A claim's hints go out beside the run rather than before it: on PostgreSQL each is a
      // round trip, and the claimed jobs' provider starts need not wait for it.
      claim: (options) => Effect.tap(repo.claim(options), publishSomeBeside),
      claimBatch: (options) => Effect.tap(repo.claimBatch(options), (jobs) => beside(jobs.map((job) => job.id))),
      claimIds: (ids, options) => Effect.tap(repo.claimIds(ids, options), (jobs) => beside(jobs.map((job) => job.id))),
      complete: (id, workerId, outputs, now, route) => Effect.tap(repo.complete(id, workerId, outputs, now, route), publishSome),
      fail: (id, workerId, error, now, route) => Effect.tap(repo.fail(id, workerId, error, now, route), publishSome),
      reap: (options) => Effect.tap(repo.reap(options), (failed) => (failed > 0 ? events.publishAll : Effect.void))
    })
  })
)
