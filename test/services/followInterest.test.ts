import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import type { RequestId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { make as makeChanges } from "../../src/services/Changes.js"
import { make as makeJobFollow } from "../../src/services/JobFollow.js"
import { Jobs } from "../../src/services/Jobs.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"

/** No job ever runs: jobs stay pending until cancelled. */
const idle: GenerationProvider = { start: () => Effect.never, poll: () => Effect.never, cancel: () => Effect.void }

/** JobEvents whose `follow` counts the holds, so a test sees when the process says it follows. */
const countingFollow = Effect.map(JobEvents, (events) => {
  const holds = { now: 0 }
  const service: JobEvents["Service"] = {
    ...events,
    follow: () => {
      holds.now++
      let released = false
      return () => {
        if (released) return
        released = true
        holds.now--
      }
    }
  }
  return { holds, service }
})

const ignore = { onJob: () => undefined, onEnd: () => undefined }

describe("a process says it follows jobs only while it does (other processes then send claims' and endings' hints)", () => {
  it.effect("JobFollow: one hold while any job is followed, released when the last follow ends or leaves", () =>
    Effect.gen(function*() {
      const { holds, service } = yield* countingFollow
      const follow = yield* makeJobFollow.pipe(Effect.provideService(JobEvents, service))
      const jobs = yield* Jobs
      const caller = yield* demoCaller()
      const submit = (i: number) =>
        Effect.map(jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } }, `req_${i}` as RequestId), (s) => s.job)
      const a = yield* submit(1)
      const b = yield* submit(2)
      expect(holds.now).toBe(0)
      const first = yield* Scope.make()
      const second = yield* Scope.make()
      yield* Scope.provide(follow.listen(a.id, 1, ignore), first)
      yield* Scope.provide(follow.listen(b.id, 1, ignore), second)
      yield* Scope.provide(follow.listen(b.id, 1, ignore), second)
      expect(holds.now).toBe(1)
      yield* Scope.close(first, Exit.void)
      expect(holds.now).toBe(1)
      yield* Scope.close(second, Exit.void)
      expect(holds.now).toBe(0)
      // A follow that ends with its job's end releases it too.
      const third = yield* Scope.make()
      let ended = false
      yield* Scope.provide(follow.listen(a.id, 1, { onJob: () => undefined, onEnd: () => void (ended = true) }), third)
      expect(holds.now).toBe(1)
      yield* jobs.cancel(caller, a.id)
      yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 0))).pipe(
        Effect.repeat({ until: () => ended, times: 200 })
      )
      expect(ended).toBe(true)
      expect(holds.now).toBe(0)
      yield* Scope.close(third, Exit.void)
      expect(holds.now).toBe(0)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("Changes: one hold while any change stream is open", () =>
    Effect.gen(function*() {
      const { holds, service } = yield* countingFollow
      const changes = yield* makeChanges.pipe(Effect.provideService(JobEvents, service))
      const caller = yield* demoCaller()
      const listener = { onEntries: () => undefined, onEnd: () => undefined }
      const leaveA = yield* changes.follow(caller, undefined, listener)
      const leaveB = yield* changes.follow(caller, undefined, listener)
      expect(holds.now).toBe(1)
      leaveA()
      expect(holds.now).toBe(1)
      leaveB()
      expect(holds.now).toBe(0)
    }).pipe(Effect.provide(memoryEngine(idle))))
})
