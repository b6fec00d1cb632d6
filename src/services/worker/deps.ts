import type { Effect, Option, Scope } from "effect"
import type { JobQueue } from "../../ports/JobQueue.js"
import type { JobRepo } from "../../ports/JobRepo.js"
import type { JobSignal } from "../../ports/JobSignal.js"
import type { WebhookSignal } from "../../ports/WebhookSignal.js"
import type { Catalog } from "../Catalog.js"
import type { EngineConfig } from "../EngineConfig.js"
import type { LeaseKeeper } from "../leaseKeeper.js"
import type { LocalWorkers } from "../LocalWorkers.js"
import type { makeOutputStore } from "../outputStore.js"
import type { makeProviderCalls } from "../providerCalls.js"
import type { LimitPlans } from "./limitPlans.js"

/** What the Worker's pieces are built from; each takes only the part it uses. */
export interface WorkerDeps {
  readonly repo: JobRepo["Service"]
  readonly catalog: Catalog["Service"]
  readonly signal: JobSignal["Service"]
  readonly webhookSignal: WebhookSignal["Service"]
  readonly config: EngineConfig["Service"]
  readonly localWorkers: LocalWorkers["Service"]
  /** A queue broker when one is configured; else the store is the queue (claimBatch, JobSignal). */
  readonly queue: Option.Option<JobQueue["Service"]>
  readonly files: Effect.Success<typeof makeOutputStore>
  readonly calls: Effect.Success<typeof makeProviderCalls>
  readonly newLeaseKeeper: Effect.Effect<LeaseKeeper, never, Scope.Scope>
  readonly limits: LimitPlans
}
