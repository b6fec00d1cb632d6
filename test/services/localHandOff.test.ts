import { describe as effectDescribe, it as effectIt } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Redacted, Schedule, Scope } from "effect"
import pg from "pg"
import { afterEach, describe, expect, it } from "vitest"
import { jobsChannel } from "../../adapters/sql/SqlJobs.js"
import { DEFAULT_TABLE_PREFIX } from "../../adapters/sql/tables.js"
import { makeEngine } from "../../entries/index.js"
import { memoryFiles } from "../../entries/memory.js"
import { postgresStore } from "../../entries/postgres.js"
import type { RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { Engine } from "../../src/engine.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { Jobs } from "../../src/services/Jobs.js"
import { AHEAD_PER_FIBER } from "../../src/services/worker/start.js"
import { Catalog } from "../../src/services/Catalog.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { LocalWorkers } from "../../src/services/LocalWorkers.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, engineOver, memoryStoresClaiming } from "../support/engineLayer.js"
import { idleProvider } from "../support/providers.js"
import { createAccount, job as jobFixture } from "../conformance/fixtures.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { waitFor } from "../support/waitFor.js"

const probe = await freshPostgresUrl()
const MODEL = "demo/text-gen/text-to-text"

/** A provider that records the prompts it starts, in order, and finishes each when `gate` lets it. */
const recordingProvider = (gate: (prompt: string) => Effect.Effect<void>) => {
  const started: Array<string> = []
  const provider: GenerationProvider = {
    start: ({ job }) =>
      Effect.gen(function*() {
        const prompt = String(job.input["prompt"])
        started.push(prompt)
        yield* gate(prompt)
        return { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const
      }),
    poll: () => Effect.die("finishes in its start"),
    cancel: () => Effect.void
  }
  return { started, provider }
}

const engines: Array<Engine> = []
const listeners: Array<pg.Client> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.dispose()))
  await Promise.all(listeners.splice(0).map((client) => client.end()))
})

/** The test's own notification, not a wake-up: see `allHeard`. */
const SENTINEL = "test: all heard"

/** The wake-ups claimers of other processes get on the database: NOTIFYs on the jobs channel. */
const wakeUps = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  listeners.push(client)
  await client.connect()
  const channel = jobsChannel(DEFAULT_TABLE_PREFIX)
  const heard = { count: 0, sentinel: false }
  client.on("notification", (message) => {
    if (message.payload === SENTINEL) heard.sentinel = true
    else heard.count++
  })
  await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
  /**
   * Sends the sentinel and waits for it: notifications arrive in commit order, so every wake-up
   * committed before this call has been counted once it returns true.
   */
  const allHeard = async () => {
    await client.query(`SELECT pg_notify($1, $2)`, [channel, SENTINEL])
    return waitFor(() => heard.sentinel)
  }
  return Object.assign(heard, { allHeard })
}

/** An engine on a fresh database whose claimer polls once a minute: only a submit's hand-off or signal wakes it. */
const engineWith = async (provider: GenerationProvider, workers: number, url?: string) => {
  const database = url ?? (await freshPostgresUrl())!
  const engine = await makeEngine({
    store: postgresStore({ url: Redacted.make(database) }),
    files: memoryFiles({ publicUrl: "http://files.test" }),
    providers: { demo: provider },
    workers,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    settings: { pollIntervalMs: 60_000 }
  })
  engines.push(engine)
  return { engine, url: database }
}

/** The demo catalog without rate limits, so submits take the one-statement path on PostgreSQL. */
const callerOf = (engine: Engine, credits: number, maxConcurrentJobs: number) =>
  engine.run(Effect.gen(function*() {
    const caller = yield* demoCaller(credits, maxConcurrentJobs)
    const catalog = demoCatalog()
    for (const model of catalog.models) {
      for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
    }
    yield* (yield* Catalog).replace(catalog)
    return caller
  }))

const submit = (engine: Engine, caller: Effect.Success<ReturnType<typeof demoCaller>>, prompt: string) =>
  engine.run(Jobs.use((jobs) => jobs.submit(caller, { model: MODEL, input: { prompt } }, "req_t" as RequestId)))

const stored = (engine: Engine, job: Job) => engine.run(Effect.map(JobRepo.use((repo) => repo.get(job.id)), Option.getOrThrow))

describe.skipIf(probe === undefined)("postgres: a submit handed to an idle worker of its own process", () => {
  it("is written as that worker's claim and run without waking any claimer; the answer still says pending", async () => {
    const { provider, started } = recordingProvider(() => Effect.void)
    const { engine, url } = await engineWith(provider, 1)
    const heard = await wakeUps(url)
    const caller = await callerOf(engine, 1_000_000, 5)
    const { job } = await submit(engine, caller, "first")
    expect(job.status).toBe("pending")
    expect(await waitFor(async () => (await stored(engine, job)).status === "completed")).toBe(true)
    expect(started).toEqual(["first"])
    expect((await stored(engine, job)).attempts).toBe(1)
    expect(await heard.allHeard()).toBe(true)
    expect(heard.count).toBe(0)
    const account = await engine.run(Effect.map(AccountRepo.use((repo) => repo.get(caller.account.id)), Option.getOrThrow))
    expect(account.balanceMicroCents).toBe(1_000_000 - job.costMicroCents)
  })

  it("queues what arrives while the workers are busy, and runs it oldest first once they free", async () => {
    const gates = new Map<string, Deferred.Deferred<void>>()
    const gateOf = (prompt: string) => {
      if (!gates.has(prompt)) gates.set(prompt, Deferred.makeUnsafe<void>())
      return gates.get(prompt)!
    }
    const { provider, started } = recordingProvider((prompt) => Deferred.await(gateOf(prompt)))
    const { engine, url } = await engineWith(provider, 1)
    const caller = await callerOf(engine, 1_000_000, 10)
    const busy = await submit(engine, caller, "busy")
    expect(await waitFor(() => started.length === 1)).toBe(true)
    const heard = await wakeUps(url)
    const later: Array<Job> = []
    for (const prompt of ["a", "b", "c"]) later.push((await submit(engine, caller, prompt)).job)
    for (const job of later) expect((await stored(engine, job)).status).toBe("pending")
    // Queued jobs wake the claimers of every process, as before.
    expect(await waitFor(() => heard.count === 3)).toBe(true)
    for (const prompt of ["busy", "a", "b", "c"]) {
      await engine.run(Deferred.succeed(gateOf(prompt), undefined))
    }
    expect(await waitFor(async () => (await stored(engine, later[2]!)).status === "completed")).toBe(true)
    expect(started).toEqual(["busy", "a", "b", "c"])
    expect((await stored(engine, busy.job)).status).toBe("completed")
  })

  it("never promises a worker twice: parallel submits beside the claimer each run once, within the workers' number", async () => {
    let running = 0
    let most = 0
    const { provider, started } = recordingProvider(() =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          most = Math.max(most, ++running)
        }),
        () => Effect.sleep("15 millis"),
        () => Effect.sync(() => running--)
      )
    )
    const { engine, url } = await engineWith(provider, 2)
    const caller = await callerOf(engine, 100_000_000, 100)
    // An API-only engine beside it queues jobs through NOTIFY, so claims and hand-offs interleave.
    const { engine: api } = await engineWith(recordingProvider(() => Effect.void).provider, 0, url)
    const prompts = Array.from({ length: 40 }, (_, i) => `p${i}`)
    const jobs = await Promise.all(prompts.map((prompt, i) => submit(i % 2 === 0 ? engine : api, caller, prompt)))
    // A process never runs more jobs than it has workers: one promised twice would wait in its buffer.
    let held = 0
    const processing = () =>
      engine.run(JobRepo.use((repo) => repo.list({ accountId: caller.account.id, status: "processing", limit: 50 })))
    expect(
      await waitFor(async () => {
        held = Math.max(held, (await processing()).length)
        for (const { job } of jobs) if ((await stored(engine, job)).status !== "completed") return false
        return true
      }, 20_000)
    ).toBe(true)
    expect([...started].sort()).toEqual([...prompts].sort())
    expect(most).toBeLessThanOrEqual(2)
    expect(held).toBeGreaterThan(0)
    // Held (processing) at most: the 2 runs, 2 completions on their way (their slots taken by
    // the next jobs as they are written) and AHEAD_PER_FIBER per worker claimed ahead
    // (docs/decisions.md, "Claiming ahead on PostgreSQL: built"); the runs themselves never
    // exceed the workers (`most`).
    expect(held).toBeLessThanOrEqual(2 + 2 + 2 * AHEAD_PER_FIBER)
    for (const { job } of jobs) expect((await stored(engine, job)).attempts).toBe(1)
  })
})

/** Memory stores whose claims wait at `gate` once it is set, counting them. */
const gatedStores = (gate: { claims: number; at?: Deferred.Deferred<void> }) =>
  memoryStoresClaiming((claimBatch) => (options) =>
    Effect.suspend(() => {
      gate.claims++
      return Effect.andThen(gate.at === undefined ? Effect.void : Deferred.await(gate.at), claimBatch(options))
    }))

const until = (check: () => boolean) => Effect.repeat(Effect.sleep("5 millis"), { until: check })

effectDescribe("the worker's idle fibers, offered to its process's submits", () => {
  effectIt.live("a claim in flight holds them, a reserved one is promised once, and a draining worker offers none", () => {
    const gate: { claims: number; at?: Deferred.Deferred<void> } = { claims: 0 }
    const running = Deferred.makeUnsafe<void>()
    const finish = Deferred.makeUnsafe<void>()
    const provider: GenerationProvider = {
      ...idleProvider,
      start: () =>
        Effect.andThen(
          Effect.andThen(Deferred.succeed(running, undefined), Deferred.await(finish)),
          Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const)
        )
    }
    return Effect.gen(function*() {
      gate.at = yield* Deferred.make<void>()
      const local = yield* LocalWorkers
      const probe = jobFixture((yield* createAccount(10_000)).id)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(2).pipe(Scope.provide(scope))
      // The claimer's first claim waits at the gate, holding both fibers: no hand-off meanwhile.
      yield* until(() => gate.claims === 1)
      expect(Option.isNone(yield* local.reserve(probe))).toBe(true)
      yield* Deferred.succeed(gate.at, undefined)
      // The claim found nothing and gave the fibers back: two submits may have them, a third not.
      let first = yield* local.reserve(probe)
      while (Option.isNone(first)) first = yield* Effect.andThen(Effect.sleep("5 millis"), local.reserve(probe))
      expect(first.value.lease).toMatchObject({ leaseOwner: expect.stringMatching(/^wrk_/), maxAttempts: 3 })
      const second = yield* local.reserve(probe)
      expect(Option.isSome(second)).toBe(true)
      expect(Option.isNone(yield* local.reserve(probe))).toBe(true)
      yield* first.value.release
      if (Option.isSome(second)) yield* second.value.release
      // A job runs on one fiber; the other is idle while the worker drains, and is not offered.
      const caller = yield* demoCaller(1_000_000, 5)
      yield* (yield* Jobs).submit(caller, { model: MODEL, input: { prompt: "runs" } }, "req_t" as RequestId)
      yield* Deferred.await(running)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      // Until the drain begins the idle fiber may still be offered: given back, and asked again.
      const offered = Effect.flatMap(
        local.reserve(probe),
        Option.match({ onNone: () => Effect.succeed(false), onSome: (slot) => Effect.as(slot.release, true) })
      )
      yield* offered.pipe(Effect.repeat({ schedule: Schedule.spaced("5 millis"), while: (was) => was }), Effect.timeout("5 seconds"))
      expect(Option.isNone(yield* local.reserve(probe))).toBe(true)
      yield* Deferred.succeed(finish, undefined)
      yield* Fiber.await(closing)
    }).pipe(Effect.provide(engineOver(gatedStores(gate), provider, { pollIntervalMs: 60_000, maxAttempts: 3, drainTimeoutMs: 30_000 })))
  })
})
