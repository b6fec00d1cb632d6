import { Context, Effect, Layer } from "effect"
import { JobQueue } from "../ports/JobQueue.js"
import { JobRepo } from "../ports/JobRepo.js"
import { JobSignal } from "../ports/JobSignal.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { Catalog } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"
import { makeLeaseKeeper } from "./leaseKeeper.js"
import { LocalWorkers } from "./LocalWorkers.js"
import { makeOutputStore } from "./outputStore.js"
import { makeProviderCalls } from "./providerCalls.js"
import type { WorkerDeps } from "./worker/deps.js"
import { makeLimitPlans } from "./worker/limitPlans.js"
import { reapOnce } from "./worker/passes.js"
import { runOnce } from "./worker/runOnce.js"
import { start } from "./worker/start.js"

export { brokerVisibilityMs } from "./brokerClaims.js"

/**
 * Runs jobs: claims them, calls their providers, stores their outputs and writes how they
 * ended. The pieces live under worker/ (runJob, the claimer, the runners, the reaper and queue
 * relay passes); this wires them from the services they use.
 */
export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  const deps: WorkerDeps = {
    repo: yield* JobRepo,
    catalog,
    signal: yield* JobSignal,
    webhookSignal: yield* WebhookSignal,
    config: yield* EngineConfig,
    localWorkers: yield* LocalWorkers,
    queue: yield* Effect.serviceOption(JobQueue),
    files: yield* makeOutputStore,
    calls: yield* makeProviderCalls,
    // These two services only: the layer's context holds the layer's Scope too (Effect 4 builds
    // Layer.effect scoped), which would take the place of the caller's and keep every keeper's
    // loop running until the engine closes.
    newLeaseKeeper: makeLeaseKeeper.pipe(Effect.provideContext(Context.pick(JobRepo, EngineConfig)(yield* Effect.context<JobRepo | EngineConfig>()))),
    limits: makeLimitPlans(catalog)
  }
  return {
    runOnce: runOnce(deps),
    reapOnce: (workerId: string) => reapOnce(deps, workerId),
    start: start(deps)
  } as const
})

export class Worker extends Context.Service<Worker, Effect.Success<typeof make>>()("genjobs/Worker") {
  static readonly layer = Layer.effect(Worker, make)
}
