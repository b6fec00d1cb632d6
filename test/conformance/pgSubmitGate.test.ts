import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, Result } from "effect"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import type { AccountId } from "../../src/domain/ids.js"
import { isRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo, type SubmitCommand } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const pgUp = await postgresAvailable()

const submit = (command: Partial<SubmitCommand> & Pick<SubmitCommand, "job">) =>
  Effect.flatMap(JobRepo, (repo) =>
    repo.submit({ maxConcurrentJobs: 100, rateLimits: NO_LIMITS, ...command }).pipe(
      Effect.map((outcome) => outcome._tag),
      Effect.catch((e) => (isRefusal(e) ? Effect.succeed(e.code) : Effect.fail(e))),
      Effect.result,
      Effect.map(Result.getOrThrow)
    ))

const ledgerLines = (id: AccountId) => Effect.map(Effect.flatMap(AccountRepo, (repo) => repo.ledger(id)), (lines) => lines.length)

if (!pgUp) {
  describe.skip("postgres submit gate (server not reachable)", () => {
    it("rolls back what the gate wrote", () => undefined)
  })
} else {
  describe("postgres: a gated submit the charge refuses writes nothing", () => {
    const stores = () => Effect.promise(freshPostgresUrl).pipe(Effect.map((url) => layerPostgres({ url: Redacted.make(url!), databaseClock: false })))

    it.live("the key's claim goes with the refusal: the same key, once the credit is there, makes the job", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(500)
        const idempotency = { key: "k", requestHash: "h", notBefore: T0 - 1 }
        expect(yield* submit({ job: job(owner.id, { costMicroCents: 1_000 }), idempotency })).toBe("INSUFFICIENT_BALANCE")
        expect(yield* ledgerLines(owner.id)).toBe(1)
        yield* Effect.flatMap(AccountRepo, (repo) => repo.addCredits(owner.id, 5_000, T0))
        // Had the refused submit's claim stayed, this would replay a job that does not exist.
        expect(yield* submit({ job: job(owner.id, { costMicroCents: 1_000 }), idempotency })).toBe("Created")
        expect(yield* submit({ job: job(owner.id, { costMicroCents: 1_000 }), idempotency })).toBe("Replayed")
        expect(yield* ledgerLines(owner.id)).toBe(3)
        expect(Option.getOrThrow(yield* Effect.flatMap(AccountRepo, (repo) => repo.get(owner.id))).balanceMicroCents).toBe(4_500)
      }).pipe((effect) => Effect.flatMap(stores(), (layer) => Effect.provide(effect, layer))))

    it.live("a window the gate counted is uncounted when the concurrency maximum refuses the submit", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(100_000)
        const limits = { requestsPerMinute: 2, requestsPerDay: 0 }
        const first = job(owner.id, { createdAt: T0 })
        expect(yield* submit({ job: first, rateLimits: limits, maxConcurrentJobs: 1 })).toBe("Created")
        expect(yield* submit({ job: job(owner.id, { createdAt: T0 + 1 }), rateLimits: limits, maxConcurrentJobs: 1 }))
          .toBe("CONCURRENT_JOBS_EXCEEDED")
        yield* Effect.flatMap(JobRepo, (repo) => repo.cancel(first.id, owner.id, T0 + 2))
        // Had the refused submit been counted, the window would be full now.
        expect(yield* submit({ job: job(owner.id, { createdAt: T0 + 3 }), rateLimits: limits, maxConcurrentJobs: 1 })).toBe("Created")
        expect(yield* submit({ job: job(owner.id, { createdAt: T0 + 4 }), rateLimits: limits, maxConcurrentJobs: 5 })).toBe("RATE_LIMIT_EXCEEDED")
      }).pipe((effect) => Effect.flatMap(stores(), (layer) => Effect.provide(effect, layer))))
  })
}
