import { Context, Effect, Layer } from "effect"
import { JobLogRepo } from "../ports/JobLogRepo.js"
import { JobQueue } from "../ports/JobQueue.js"
import { JobRepo } from "../ports/JobRepo.js"
import { JobSignal } from "../ports/JobSignal.js"
import { Catalog } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"
import { cancel } from "./jobs/cancel.js"
import type { JobsDeps } from "./jobs/deps.js"
import { estimate } from "./jobs/estimate.js"
import { get, list } from "./jobs/reads.js"
import { logs } from "./jobs/logs.js"
import { submit } from "./jobs/submit.js"
import { LocalWorkers } from "./LocalWorkers.js"
import { QueueBook } from "./QueueBook.js"

export { MAX_WEBHOOK_URL_LENGTH } from "./jobs/checks.js"
export type { JobPage, ListRequest } from "./jobs/reads.js"
export type { LogPage, LogRequest } from "./jobs/logs.js"
export type { SubmitRequest, SubmitResult } from "./jobs/submit.js"

/** A caller's jobs: each use case lives in its own file under jobs/, built here from the services it uses. */
export const make = Effect.gen(function*() {
  const deps: JobsDeps = {
    repo: yield* JobRepo,
    catalog: yield* Catalog,
    signal: yield* JobSignal,
    config: yield* EngineConfig,
    localWorkers: yield* LocalWorkers,
    queue: yield* Effect.serviceOption(JobQueue),
    estimateAtSubmit: (yield* QueueBook).estimateAtSubmit
  }
  return {
    estimate: Effect.fn("Jobs.estimate")(estimate(deps)),
    submit: Effect.fn("Jobs.submit")(submit(deps)),
    get: Effect.fn("Jobs.get")(get(deps)),
    list: Effect.fn("Jobs.list")(list(deps)),
    cancel: Effect.fn("Jobs.cancel")(cancel(deps)),
    logs: Effect.fn("Jobs.logs")(logs({ repo: deps.repo, logs: yield* JobLogRepo }))
  } as const
})

export class Jobs extends Context.Service<Jobs, Effect.Success<typeof make>>()("genjobs/Jobs") {
  static readonly layer = Layer.effect(Jobs, make)
}
