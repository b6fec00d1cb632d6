import { describe as effectDescribe, it as effectIt } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { expect } from "vitest"
import type { JobId } from "../../src/domain/ids.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { Worker } from "../../src/services/Worker.js"
import { createAccount, job, NO_LIMITS } from "../conformance/fixtures.js"
import { engineOver, memoryStoresClaiming } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"

/** One claim the worker asked the store for: riding on its completions or its own, and the jobs it took. */
interface ClaimAsked {
  readonly riding: boolean
  taken?: ReadonlyArray<JobId>
}

/** Memory stores whose claims are logged in `asked`, as they are asked for and as they answer. */
const loggedStores = (asked: Array<ClaimAsked>) =>
  memoryStoresClaiming((claimBatch) => (options) =>
    Effect.suspend(() => {
      const claim: ClaimAsked = { riding: options.besideEndings !== undefined }
      asked.push(claim)
      return Effect.tap(claimBatch(options), (jobs) => Effect.sync(() => (claim.taken = jobs.map((j) => j.id))))
    }))

const until = (check: () => boolean) => Effect.repeat(Effect.sleep("2 millis"), { until: check })

effectDescribe("a worker woken by a submit (docs/decisions.md, \"The intake a function of the claim\")", () => {
  effectIt.live("claims the job in its own claim at once, with no claim riding on completions asked for first", () => {
    const asked: Array<ClaimAsked> = []
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(1).pipe(Scope.provide(scope))
      // Its first claim of its own finds the queue empty: the claimer waits for a signal (the poll is a minute away).
      yield* until(() => asked.some((claim) => !claim.riding && claim.taken !== undefined))
      const waiting = asked.length
      expect(asked.at(-1)).toEqual({ riding: false, taken: [] })
      // Another process's submit: the job stored, then the claimers woken (no local hand-off).
      const owner = yield* createAccount(1_000_000)
      const submitted = job(owner.id, { costMicroCents: 100 })
      yield* (yield* JobRepo).submit({ job: submitted, maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
      yield* (yield* JobSignal).notify
      yield* until(() => asked.some((claim) => claim.taken?.includes(submitted.id) === true))
      const toTheJob = asked.slice(waiting, asked.findIndex((claim) => claim.taken?.includes(submitted.id) === true) + 1)
      expect(toTheJob).toEqual([{ riding: false, taken: [submitted.id] }])
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(engineOver(loggedStores(asked), idleProvider, { pollIntervalMs: 60_000, drainTimeoutMs: 100 })))
  })
})
