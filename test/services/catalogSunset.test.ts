import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Result } from "effect"
import { TestClock } from "effect/testing"
import type { RequestId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Catalog } from "../../src/services/Catalog.js"
import { Jobs } from "../../src/services/Jobs.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"

const TEXT = "demo/text-gen/text-to-text"
/** An hour after the TestClock's start (the epoch). */
const SUNSET = "1970-01-01T01:00:00Z"

const withSunset = () => {
  const doc = demoCatalog()
  for (const version of doc.models.find((m) => m.slug === TEXT)!.versions) version.sunsetAt = SUNSET
  return doc
}

/** The code a refusal carries; undefined for an answer. */
const codeOf = (result: Result.Result<unknown, { readonly _tag: string; readonly code?: string }>) =>
  Result.isFailure(result) ? result.failure.code ?? result.failure._tag : undefined

describe("a version's sunset, by the engine's Clock", () => {
  it.effect("before it a submit is taken and told the sunset; from it on the version is served as disabled and nothing is charged", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller(1_000_000)
      const catalog = yield* Catalog
      yield* catalog.replace(withSunset())
      const jobs = yield* Jobs
      const submit = Effect.result(jobs.submit(caller, { model: TEXT, input: { prompt: "p" } }, "req_t" as RequestId))
      const balance = Effect.map(
        AccountRepo.use((accounts) => accounts.get(caller.account.id)),
        (account) => Option.getOrThrow(account).balanceMicroCents
      )

      yield* TestClock.adjust("59 minutes")
      const before = yield* submit
      expect(Result.map(before, (result) => result.sunsetAt)).toEqual(Result.succeed(SUNSET))
      const charged = yield* balance
      expect(charged).toBeLessThan(1_000_000)
      const versionStatus = Effect.map(catalog.served, (served) => served.document.models.find((m) => m.slug === TEXT)!.versions[0]!.status)
      expect(yield* versionStatus).toBe("active")

      yield* TestClock.adjust("1 minute")
      const after = yield* submit
      expect(codeOf(after)).toBe("MODEL_NOT_FOUND")
      expect(yield* balance).toBe(charged)
      expect(yield* versionStatus).toBe("disabled")
      expect(codeOf(yield* Effect.result(jobs.estimate(caller, { model: TEXT })))).toBe("MODEL_NOT_FOUND")
      // The job taken before the sunset still runs: the worker looks its version up as stored.
      const job = Result.getOrThrow(before).job
      expect(Option.isSome(yield* (yield* JobRepo).get(job.id))).toBe(true)
      expect(yield* catalog.forJob(TEXT, job.version)).toBeDefined()
    }).pipe(Effect.provide(memoryEngine(idleProvider))))
})
