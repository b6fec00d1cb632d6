import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { QueueError } from "../../src/domain/errors.js"
import type { JobId, RequestId } from "../../src/domain/ids.js"
import type { QueuedJob } from "../../src/ports/JobQueue.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { Catalog } from "../../src/services/Catalog.js"
import { defaultEngineSettings } from "../../src/services/EngineConfig.js"
import { Jobs } from "../../src/services/Jobs.js"
import { relay, republishAfterMs } from "../../src/services/worker/passes.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"

const provider: GenerationProvider = {
  start: () => Effect.die("no job is run here"),
  poll: () => Effect.die("no job is run here"),
  cancel: () => Effect.void
}

const INTERVAL = 5_000
const GRACE = 60_000
const config = { ...defaultEngineSettings, queueRelayIntervalMs: INTERVAL, queueRelayGraceMs: GRACE, leaseMs: 60_000 }
/** More than one relay page (1,000 pending jobs): the cursor's walk is part of what is counted. */
const JOBS = 1_200

/** Submits `JOBS` jobs at the current (test) time; nothing claims them, so all stay pending. */
const submitAll = Effect.gen(function*() {
  const caller = yield* demoCaller(1_000_000_000_000, 10_000)
  const unlimited = demoCatalog()
  for (const model of unlimited.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
  yield* (yield* Catalog).replace(unlimited)
  const jobs = yield* Jobs
  return yield* Effect.forEach(
    Array.from({ length: JOBS }, (_, i) => i),
    (i) => Effect.map(jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } }, "req_t" as RequestId), (r) => r.job.id)
  )
})

/** A broker that records when each job was published; it delivers nothing. */
const recordingBroker = () => {
  const publishes = new Map<JobId, Array<number>>()
  let refusals = 0
  const publish = (jobs: ReadonlyArray<QueuedJob>) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (refusals > 0) {
        refusals--
        return Effect.fail(new QueueError({ message: "broker down" }))
      }
      for (const { jobId } of jobs) publishes.set(jobId, [...(publishes.get(jobId) ?? []), now])
      return Effect.void
    })
  return { publishes, publish, refuseNext: (n: number) => (refusals = n) }
}

/** Moves the test clock on pass by pass, so every pass runs at its own time. */
const passTo = (until: number) =>
  Effect.gen(function*() {
    while ((yield* Clock.currentTimeMillis) < until) yield* TestClock.adjust(INTERVAL)
  })

const relayOf = (broker: ReturnType<typeof recordingBroker>, workerId: string) =>
  Effect.flatMap(JobRepo, (repo) => Effect.forkChild(relay({ config, repo, queue: Option.some({ publish: broker.publish, consume: () => Effect.die("unused") }) }, workerId)))

describe("the queue relay", () => {
  it.effect("publishes a pending job past its grace once per republish interval, not once per pass", () =>
    Effect.provide(
      Effect.gen(function*() {
        expect(republishAfterMs(config)).toBe(90_000)
        const ids = yield* submitAll
        const broker = recordingBroker()
        yield* relayOf(broker, "rly_a")
        yield* passTo(250_000)
        // 50 passes: a pass every 5 s. Each job: once past its grace, then every 90 s.
        for (const id of ids) {
          const times = broker.publishes.get(id) ?? []
          expect(times).toHaveLength(3)
          expect(times[0]).toBeGreaterThanOrEqual(GRACE)
          expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(90_000)
          expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(90_000)
        }
        // And none waits longer than the page walk between two publishes: 90 s and two passes.
        for (const id of ids) {
          const [first, second, third] = broker.publishes.get(id)!
          expect(first).toBeLessThanOrEqual(GRACE + 2 * INTERVAL)
          expect(second! - first!).toBeLessThanOrEqual(90_000 + 2 * INTERVAL)
          expect(third! - second!).toBeLessThanOrEqual(90_000 + 2 * INTERVAL)
        }
      }),
      memoryEngine(provider, config)
    ))

  it.effect("remembers only what it published: a failed publish is tried again on the next pass, then not again", () =>
    Effect.provide(
      Effect.gen(function*() {
        const ids = yield* submitAll
        const broker = recordingBroker()
        broker.refuseNext(1)
        yield* relayOf(broker, "rly_a")
        yield* passTo(GRACE + 4 * INTERVAL)
        // The first page's publish failed at 60 s: the walk restarts there and publishes it on the next pass.
        expect(ids.every((id) => (broker.publishes.get(id) ?? []).length === 1)).toBe(true)
      }),
      memoryEngine(provider, config)
    ))

  it.effect("leaves every pending job published by another process's relay once the first one crashed", () =>
    Effect.provide(
      Effect.gen(function*() {
        const ids = yield* submitAll
        const first = recordingBroker()
        const crashed = yield* relayOf(first, "rly_a")
        yield* passTo(GRACE + INTERVAL)
        expect(ids.every((id) => first.publishes.get(id)?.length === 1)).toBe(true)
        yield* Fiber.interrupt(crashed)
        const second = recordingBroker()
        yield* relayOf(second, "rly_b")
        // The first relay's pass lease (two intervals from its last pass) runs out; the second
        // takes the pass and, knowing nothing of those publishes, publishes every job by the grace rule.
        yield* passTo(GRACE + 5 * INTERVAL)
        expect(ids.filter((id) => (second.publishes.get(id) ?? []).length === 0)).toEqual([])
      }),
      memoryEngine(provider, config)
    ))
})
