import { Effect, Layer } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"

/** In-process job hints: the subscribers' callbacks by job id, and those of every job. */
export const makeLocalJobEvents = Effect.sync(() => {
  const listeners = new Map<string, Set<() => void>>()
  const everyJob = new Set<(jobId: JobId | undefined) => void>()
  const publish = (jobIds: ReadonlyArray<JobId>) =>
    Effect.sync(() => {
      for (const jobId of jobIds) {
        listeners.get(jobId)?.forEach((onHint) => onHint())
        for (const onHint of everyJob) onHint(jobId)
      }
    })
  /** Hints every follower: after the reaper's abandonments, or a gap in which notifications from other processes may have been lost. */
  const publishAll = Effect.sync(() => {
    listeners.forEach((set) => set.forEach((onHint) => onHint()))
    for (const onHint of everyJob) onHint(undefined)
  })
  const subscribe = (jobId: JobId, onHint: () => void) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        // A callback of its own, so one follower subscribing twice is two subscriptions.
        const listener = () => onHint()
        const set = listeners.get(jobId) ?? new Set()
        set.add(listener)
        listeners.set(jobId, set)
        return listener
      }),
      (listener) =>
        Effect.sync(() => {
          const set = listeners.get(jobId)
          set?.delete(listener)
          if (set?.size === 0) listeners.delete(jobId)
        })
    ).pipe(Effect.asVoid)
  const subscribeAll = (onHint: (jobId: JobId | undefined) => void) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const listener = (jobId: JobId | undefined) => onHint(jobId)
        everyJob.add(listener)
        return listener
      }),
      (listener) => Effect.sync(() => everyJob.delete(listener))
    ).pipe(Effect.asVoid)
  // In one process a hint is a few calls: every change is published, followed or not.
  const follow = () => () => {}
  return { publish, publishIfFollowed: publish, publishAll, follow, subscribe, subscribeAll }
})

export const layerLocalJobEvents = Layer.effect(JobEvents, Effect.map(makeLocalJobEvents, JobEvents.of))
