/**
 * claim_cost: the time of one claim through the engine's JobRepo port on PostgreSQL with a
 * million pending jobs. One job goes in through Jobs.submit; the rest are copies of its row made
 * with generate_series (jsonb_populate_record, so whatever columns the jobs table has are copied),
 * each older (and earlier in the fair order) than the last so the claim order is defined (LATERAL, so the record is built once a
 * row, not once a column). The reference is the target. Sampling stops after
 * BENCH_CLAIM_SECONDS, so a slow claim path still finishes in bounded time (the count is reported).
 */
import { Effect, Option } from "effect"
import { JobRepo } from "genjobs"
import { seed, startPgEngine, submit, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { copyJobRows, withDatabase } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"

const WARMUP = 5
const TARGET_MS = 2

export const claimCost = () =>
  withDatabase("claim", async (url, name) => {
    const pending = settings.claimPending
    const engine = await startPgEngine(url, { workers: 0 })
    try {
      const [caller] = await seed(engine, 1)
      const template = (await submit(engine, caller!, "template")).job
      log(`claim_cost: copying the job to ${pending} pending rows`)
      const fillStart = performance.now()
      await copyJobRows(name, TABLE_PREFIX, [template.id], pending - 1, { createdAt: -1, fairKey: -1 })
      const fillSeconds = (performance.now() - fillStart) / 1000
      log(`claim_cost: up to ${settings.claimSamples} claims or ${settings.claimSeconds} s`)
      const claimOnce = (i: number) =>
        engine.run(Effect.flatMap(JobRepo, (jobs) =>
          jobs.claim({ workerId: `wrk_bench_${i}`, now: Date.now(), leaseMs: 60_000, maxAttempts: 3 })))
      const times: Array<number> = []
      const deadline = performance.now() + settings.claimSeconds * 1000
      for (let i = 0; i < WARMUP + settings.claimSamples && (times.length < 10 || performance.now() < deadline); i++) {
        const start = performance.now()
        const claimed = await claimOnce(i)
        const elapsed = performance.now() - start
        if (Option.isNone(claimed)) throw new Error(`claim ${i} found no job among ${pending} pending`)
        if (i >= WARMUP) times.push(elapsed)
      }
      emit({
        figure: "claim_cost",
        engine: percentile(times, 50),
        reference: TARGET_MS,
        unit: "ms",
        better: "lower",
        referenceIs: "the issue's target (2 ms at 1,000,000 pending)",
        target: "<= 1",
        params: {
          pending,
          samples: times.length,
          warmup: WARMUP,
          p99Ms: ms(percentile(times, 99)),
          meanMs: ms(times.reduce((a, b) => a + b, 0) / times.length),
          fillSeconds: ms(fillSeconds),
          via: "JobRepo.claim through engine.run, sequential, one PostgreSQL on 127.0.0.1"
        }
      })
    } finally {
      await engine.dispose()
    }
  })
