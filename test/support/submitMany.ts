import { Effect } from "effect"
import type { Caller } from "../../src/services/Auth.js"
import type { JobId, RequestId } from "../../src/domain/ids.js"
import { Catalog } from "../../src/services/Catalog.js"
import { Jobs } from "../../src/services/Jobs.js"
import { demoCatalog } from "./demoCatalog.js"
import { demoCaller } from "./engineLayer.js"

/** A caller with room for many jobs, on the demo catalog without rate limits. */
export const unlimitedCaller = Effect.gen(function*() {
  const caller = yield* demoCaller(1_000_000_000, 100_000)
  const unlimited = demoCatalog()
  for (const model of unlimited.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
  yield* (yield* Catalog).replace(unlimited)
  return caller
})

/** Submits `n` text jobs as `caller`, one after the other. */
export const submitAs = (caller: Caller, n: number) =>
  Effect.gen(function*() {
    const jobs = yield* Jobs
    const ids: Array<JobId> = []
    for (let i = 0; i < n; i++) {
      ids.push((yield* jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } }, `req_${i}` as RequestId)).job.id)
    }
    return ids
  })

/** Submits `n` text jobs from one caller with room for them all. */
export const submitMany = (n: number) => Effect.flatMap(unlimitedCaller, (caller) => submitAs(caller, n))
