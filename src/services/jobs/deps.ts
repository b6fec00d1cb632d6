import type { Option } from "effect"
import type { Job } from "../../domain/job.js"
import type { JobQueue } from "../../ports/JobQueue.js"
import type { JobRepo } from "../../ports/JobRepo.js"
import type { JobSignal } from "../../ports/JobSignal.js"
import type { Catalog } from "../Catalog.js"
import type { EngineConfig } from "../EngineConfig.js"
import type { LocalWorkers } from "../LocalWorkers.js"

/** What the Jobs use cases are built from; each takes only the part it uses. */
export interface JobsDeps {
  readonly repo: JobRepo["Service"]
  readonly catalog: Catalog["Service"]
  readonly signal: JobSignal["Service"]
  readonly config: EngineConfig["Service"]
  readonly localWorkers: LocalWorkers["Service"]
  /** A queue broker when one is configured; else the store is the queue. */
  readonly queue: Option.Option<JobQueue["Service"]>
  /** When a job about to be submitted should end, the queue ahead counted (QueueBook.estimateAtSubmit). */
  readonly estimateAtSubmit: (job: Job, now: number) => number
}
