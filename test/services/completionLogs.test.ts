import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Option, Result } from "effect"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { StoreError } from "../../src/domain/errors.js"
import type { OutputItem } from "../../src/domain/job.js"
import { observeJobRepo } from "../../src/observability/observedJobRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS } from "../conformance/fixtures.js"

type Repo = JobRepo["Service"]

/**
 * The store's repo, whose first write of an ending commits and then fails, as when the
 * connection is cut after COMMIT and its answer is lost: the worker's retry finds the job ended.
 */
const answerLostOnce = (repo: Repo): Repo => {
  let lost = false
  const loseFirst = <A>(write: Effect.Effect<A, StoreError>) =>
    Effect.flatMap(write, (value) =>
      lost ? Effect.succeed(value) : Effect.andThen(Effect.sync(() => (lost = true)), Effect.fail(new StoreError({ message: "connection lost after COMMIT" }))))
  return {
    ...repo,
    complete: (...args) => loseFirst(repo.complete(...args)),
    fail: (...args) => loseFirst(repo.fail(...args))
  }
}

/** The observed repo over one that loses its first ending's answer, and the log lines it wrote. */
const setUp = Effect.gen(function*() {
  const store = yield* JobRepo
  const owner = yield* createAccount(1_000_000)
  const submitted = job(owner.id, { costMicroCents: 100 })
  yield* store.submit({ job: submitted, maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
  yield* store.claim({ workerId: "w", now: Date.now(), leaseMs: 60_000, maxAttempts: 3 })
  return { id: submitted.id, repo: observeJobRepo(answerLostOnce(store)) }
})

const withLines = <A, E, R>(run: (lines: Array<{ message: string; jobId: unknown }>) => Effect.Effect<A, E, R>) => {
  const lines: Array<{ message: string; jobId: unknown }> = []
  const recording = Logger.layer([
    Logger.make(({ message }) => {
      const [text, fields] = Array.isArray(message) ? message : [message]
      lines.push({ message: String(text), jobId: (fields as { jobId?: unknown } | undefined)?.jobId })
    })
  ])
  return Effect.provide(run(lines), recording)
}

const OUTPUTS: ReadonlyArray<OutputItem> = [{ url: "https://files.test/job-attempt1-0.png", type: "image" }]

describe("every ending logs its line", () => {
  it.effect("a completion whose answer was lost after its commit is logged when the retry finds it done", () =>
    withLines((lines) =>
      Effect.gen(function*() {
        const { id, repo } = yield* setUp
        expect(Result.isFailure(yield* Effect.result(repo.complete(id, "w", OUTPUTS, Date.now())))).toBe(true)
        // The worker's retry: the job is no longer held, so the write ends nothing.
        expect(Option.isNone(yield* repo.complete(id, "w", OUTPUTS, Date.now()))).toBe(true)
        expect(lines.filter((l) => l.message === "job completed")).toEqual([{ message: "job completed", jobId: id }])
      })).pipe(Effect.provide(layerMemoryStores)))

  it.effect("a completion by another run (other outputs) is not logged as this one's", () =>
    withLines((lines) =>
      Effect.gen(function*() {
        const { id, repo } = yield* setUp
        yield* Effect.result(repo.complete(id, "w", OUTPUTS, Date.now()))
        const others = [{ url: "https://files.test/job-attempt2-0.png", type: "image" as const }]
        expect(Option.isNone(yield* repo.complete(id, "w2", others, Date.now()))).toBe(true)
        expect(lines.filter((l) => l.message === "job completed")).toEqual([])
      })).pipe(Effect.provide(layerMemoryStores)))

  it.effect("a failure whose answer was lost after its commit is logged when the retry finds it failed", () =>
    withLines((lines) =>
      Effect.gen(function*() {
        const { id, repo } = yield* setUp
        const error = { code: "GENERATION_FAILED" as const, message: "the model refused", type: "input_rejected" as const, retryable: false }
        expect(Result.isFailure(yield* Effect.result(repo.fail(id, "w", error, Date.now())))).toBe(true)
        expect(Option.isNone(yield* repo.fail(id, "w", error, Date.now()))).toBe(true)
        expect(lines.filter((l) => l.message === "job failed")).toEqual([{ message: "job failed", jobId: id }])
      })).pipe(Effect.provide(layerMemoryStores)))
})
