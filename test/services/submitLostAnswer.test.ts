import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Result } from "effect"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { StoreError } from "../../src/domain/errors.js"
import type { RequestId } from "../../src/domain/ids.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Jobs } from "../../src/services/Jobs.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"

type Fault = "none" | "after commit" | "before commit" | "after commit, reads down"

/** The memory store with the faults a database connection can have around a submit's commit. */
const storesWith = (fault: { current: Fault }) =>
  Layer.flatMap(layerMemoryStores, (stores) => {
    const repo = Context.get(stores, JobRepo)
    const lost = new StoreError({ message: "Connection terminated unexpectedly" })
    return Layer.succeedContext(Context.add(stores, JobRepo, {
      ...repo,
      submit: (command) =>
        fault.current === "before commit"
          ? Effect.fail(lost)
          : fault.current === "none"
          ? repo.submit(command)
          : Effect.andThen(repo.submit(command), Effect.fail(lost)),
      get: (id) => (fault.current === "after commit, reads down" ? Effect.fail(lost) : repo.get(id))
    }))
  })

const CREDITS = 1_000_000

/** One submit under `fault`: its outcome, the engine error it failed with if any, and what the account was charged. */
const submitUnder = (fault: { current: Fault }, during: Fault) =>
  Effect.gen(function*() {
    const caller = yield* demoCaller(CREDITS)
    fault.current = during
    const result = yield* Effect.result(
      (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "p" } }, "req_t" as RequestId)
    )
    fault.current = "none"
    const account = Option.getOrThrow(yield* (yield* AccountRepo).get(caller.account.id))
    const error = Result.isFailure(result) && isRefusal(result.failure) ? result.failure : undefined
    return { result, error, charged: CREDITS - account.balanceMicroCents }
  })

describe("a submit whose store fails around its commit", () => {
  const fault = { current: "none" as Fault }
  const engine = engineOver(storesWith(fault), idleProvider)

  it.effect("committed, its answer lost: the job is found by its id and answered as created, charged once", () =>
    Effect.gen(function*() {
      const { charged, result } = yield* submitUnder(fault, "after commit")
      expect(Result.isSuccess(result)).toBe(true)
      const { job } = Result.getOrThrow(result)
      expect(job.status).toBe("pending")
      expect(charged).toBe(job.costMicroCents)
      expect(Option.isSome(yield* (yield* JobRepo).get(job.id))).toBe(true)
    }).pipe(Effect.provide(engine)))

  it.effect("not committed: 503 PUBSUB_PUBLISH_FAILED, nothing charged", () =>
    Effect.gen(function*() {
      const { charged, error } = yield* submitUnder(fault, "before commit")
      expect(error?.code).toBe("PUBSUB_PUBLISH_FAILED")
      expect(error?.message).toContain("nothing was charged")
      expect(charged).toBe(0)
    }).pipe(Effect.provide(engine)))

  it.effect("committed, and the store cannot be read either: 503 naming the job's id, under which the job is found", () =>
    Effect.gen(function*() {
      const { charged, error } = yield* submitUnder(fault, "after commit, reads down")
      expect(error?.code).toBe("PUBSUB_PUBLISH_FAILED")
      expect(error?.message).not.toContain("nothing was charged")
      expect(error?.retryAfterSeconds).toBeGreaterThan(0)
      const jobId = String(error?.details?.["jobId"])
      const stored = Option.getOrThrow(yield* (yield* JobRepo).get(jobId as never))
      expect(charged).toBe(stored.costMicroCents)
    }).pipe(Effect.provide(engine)))
})
