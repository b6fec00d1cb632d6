import { Context, Effect, Layer, Option } from "effect"
import { JobRepo } from "../ports/JobRepo.js"
import type { RunTime } from "../domain/queuePosition.js"
import { RunTimeSketch } from "../domain/runTimeSketch.js"

/**
 * How long each model's jobs ran lately, as this process saw them end: one RunTimeSketch per
 * model, fed by `layerRunTimedJobRepo` where jobs complete. Queue estimates read it (QueueBook).
 */
export class RunTimes extends Context.Service<RunTimes, {
  /** Records one completed run: O(1), no allocation. */
  readonly record: (model: string, runMs: number) => void
  /** The model's p50 and p90 run time; undefined before any of its runs was recorded. */
  readonly of: (model: string) => RunTime | undefined
  /** Whether any run was recorded yet (a store read may seed an empty book). */
  readonly isEmpty: () => boolean
}>()("genjobs/RunTimes") {
  static readonly layer = Layer.sync(RunTimes, () => {
    const sketches = new Map<string, RunTimeSketch>()
    return {
      record: (model, runMs) => {
        let sketch = sketches.get(model)
        if (sketch === undefined) sketches.set(model, sketch = new RunTimeSketch())
        sketch.record(runMs)
      },
      of: (model) => sketches.get(model)?.percentiles(),
      isEmpty: () => sketches.size === 0
    }
  })
}

/** The JobRepo whose completions of this process are recorded in RunTimes: one map lookup per job. */
export const layerRunTimedJobRepo = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const runTimes = yield* RunTimes
    return JobRepo.of({
      ...repo,
      // A map over the answer: no effect of its own per job.
      complete: (id, workerId, outputs, now, route) =>
        Effect.map(repo.complete(id, workerId, outputs, now, route), (found) => {
          if (Option.isSome(found) && found.value.startedAt !== null && found.value.completedAt !== null) {
            runTimes.record(found.value.model, found.value.completedAt - found.value.startedAt)
          }
          return found
        })
    })
  })
)
