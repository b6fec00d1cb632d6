/** The engine's state now and how long jobs ran: what the dashboard's Usage page shows beside spend. */

/** A completed job's model and how long it ran, from its start to its end (ms). */
export interface JobRun {
  readonly model: string
  readonly runMs: number
}

/** The jobs waiting and running now, and the runs of the jobs completed in a range (newest first, at most `limit`). */
export interface StatsRead {
  readonly pending: number
  readonly processing: number
  readonly runs: ReadonlyArray<JobRun>
}

export interface StatsQuery {
  /** Jobs completed at or after this time (epoch ms). */
  readonly from: number
  /** Jobs completed before this time (epoch ms). */
  readonly to: number
  /** The most recent completed jobs read for the run times. */
  readonly limit: number
}

/** How many completed jobs the run-time percentiles are taken over, at most: the newest of the range. */
export const MAX_STATS_RUNS = 10_000

export interface RunTimes {
  readonly model: string
  readonly jobs: number
  readonly p50Ms: number
  readonly p95Ms: number
}

/** The nearest-rank percentile (`p` in (0, 100]) of values sorted ascending: a run time some job really took. */
const nearestRank = (sorted: ReadonlyArray<number>, p: number): number => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!

/** p50 and p95 run time per model, models in name order. */
export const runTimesByModel = (runs: ReadonlyArray<JobRun>): ReadonlyArray<RunTimes> => {
  const byModel = new Map<string, Array<number>>()
  for (const run of runs) {
    const list = byModel.get(run.model)
    if (list === undefined) byModel.set(run.model, [run.runMs])
    else list.push(run.runMs)
  }
  return [...byModel.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([model, times]) => {
      const sorted = times.sort((a, b) => a - b)
      return { model, jobs: sorted.length, p50Ms: nearestRank(sorted, 50), p95Ms: nearestRank(sorted, 95) }
    })
}

/** The queue now (`at`) and the run times of the jobs completed in [from, to), times in epoch ms. */
export interface Stats {
  readonly at: number
  readonly from: number
  readonly to: number
  readonly pending: number
  readonly processing: number
  readonly runTimes: ReadonlyArray<RunTimes>
}
