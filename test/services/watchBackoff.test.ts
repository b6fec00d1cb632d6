import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Random } from "effect"
import { TestClock } from "effect/testing"
import { backoffDelayMs } from "../../src/domain/backoff.js"
import type { JobId } from "../../src/domain/ids.js"
import type { JobEvents } from "../../src/ports/JobEvents.js"
import { type GenerationProvider, type ProviderRequest, ProviderUnreachable } from "../../src/ports/Provider.js"
import { defaultEngineSettings } from "../../src/services/EngineConfig.js"
import { makeWatcher } from "../../src/services/watch/watcher.js"

const RETRY = { baseMs: 1_000, capMs: 8_000, maxRetries: 5 }
/** The dispatcher's tick (watcher.ts's TICK_MS): a due generation is polled at the first tick from its due time. */
const TICK_MS = 20

/**
 * One generation whose every poll fails transiently, watched until its retries run out, under
 * `seed`: the gaps between its polls, each the failure backoff it drew (to the tick).
 */
const backoffGaps = (seed: string) =>
  Effect.scoped(Effect.gen(function*() {
    const polledAt: Array<number> = []
    const provider: GenerationProvider = {
      start: () => Effect.die("not started here"),
      poll: () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          polledAt.push(now)
          return Effect.fail(new ProviderUnreachable({ message: "connection reset" }))
        }),
      cancel: () => Effect.void
    }
    const watcher = yield* makeWatcher({
      config: { ...defaultEngineSettings, providerRetry: RETRY },
      events: { subscribeAll: () => Effect.void } as unknown as JobEvents["Service"],
      retrying: (call) => call
    })
    let outcome: string | undefined
    yield* watcher.watch({
      lease: { id: "job_1" as JobId, workerId: "w", expiresAt: Infinity, lost: false, onLost: undefined },
      providerId: "demo",
      provider,
      request: { job: {} } as ProviderRequest,
      handle: { id: "gen_1" },
      deadline: undefined,
      timeoutSeconds: undefined,
      ended: (ended) => {
        outcome = ended._tag
      }
    })
    // Every ceiling's worth, and a tick for each retry.
    yield* TestClock.adjust(RETRY.maxRetries * (RETRY.capMs + TICK_MS))
    expect(outcome).toBe("Failed")
    expect(polledAt).toHaveLength(RETRY.maxRetries + 1)
    return polledAt.slice(1).map((at, i) => at - polledAt[i]!)
  })).pipe(Random.withSeed(seed))

/** The failure backoffs `seed`'s first draws give. */
const drawnDelays = (seed: string) =>
  Effect.forEach(Array.from({ length: RETRY.maxRetries }, (_, attempt) => attempt), (attempt) =>
    Effect.map(Random.next, (random) => backoffDelayMs(RETRY, attempt, random))).pipe(Random.withSeed(seed))

describe("the watch list's poll-failure backoff", () => {
  it.effect("draws from the Random service: one seed gives the same delays each run, another seed others", () =>
    Effect.gen(function*() {
      const first = yield* backoffGaps("one")
      expect(yield* backoffGaps("one")).toEqual(first)
      expect(yield* backoffGaps("two")).not.toEqual(first)
      // Each gap is the seed's draw for that retry, up to the tick the poll waited for.
      const drawn = yield* drawnDelays("one")
      first.forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(drawn[i]!)
        expect(gap).toBeLessThan(drawn[i]! + TICK_MS)
      })
    }))
})
