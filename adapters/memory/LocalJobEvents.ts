import { Effect, Layer, Queue, Stream } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"

/**
 * In-process job hints: a set of queues per job id. Each queue slides at one element, since a
 * follower re-reads the job anyway and two pending hints say no more than one.
 */
export const makeLocalJobEvents = Effect.sync(() => {
  const listeners = new Map<string, Set<Queue.Queue<void>>>()
  const offerAll = (queues: Iterable<Queue.Queue<void>>) =>
    Effect.forEach(queues, (queue) => Queue.offer(queue, undefined), { discard: true })
  const publish = (jobIds: ReadonlyArray<JobId>) =>
    Effect.suspend(() => offerAll(jobIds.flatMap((jobId) => [...(listeners.get(jobId) ?? [])])))
  /** Hints every follower: after a gap in which notifications from other processes may have been lost. */
  const publishAll = Effect.suspend(() => offerAll([...listeners.values()].flatMap((set) => [...set])))
  const subscribe = (jobId: JobId) =>
    Effect.acquireRelease(
      Effect.tap(Queue.sliding<void>(1), (queue) =>
        Effect.sync(() => {
          const set = listeners.get(jobId) ?? new Set()
          set.add(queue)
          listeners.set(jobId, set)
        })),
      (queue) =>
        Effect.sync(() => {
          const set = listeners.get(jobId)
          set?.delete(queue)
          if (set?.size === 0) listeners.delete(jobId)
        }).pipe(Effect.zipRight(Queue.shutdown(queue)))
    ).pipe(Effect.map((queue) => Stream.fromQueue(queue)))
  return { publish, publishAll, subscribe }
})

export const layerLocalJobEvents = Layer.effect(JobEvents, Effect.map(makeLocalJobEvents, ({ publish, subscribe }) => JobEvents.of({ publish, subscribe })))
