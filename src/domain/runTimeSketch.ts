import type { RunTime } from "./queuePosition.js"

/** Run times a sketch keeps: the latest ones, enough for a stable 90th percentile. */
export const SKETCH_SIZE = 256

/**
 * The latest run times of one model, in a fixed ring: recording one is O(1) with no allocation
 * (it sits where jobs end), and the percentiles are sorted out of at most SKETCH_SIZE numbers
 * only when asked after a change. Recent runs only, so a model that got slower (a provider's
 * bad day) shows it within a few hundred jobs.
 */
export class RunTimeSketch {
  private readonly ring = new Float64Array(SKETCH_SIZE)
  private size = 0
  private next = 0
  private cached: RunTime | undefined

  record(runMs: number): void {
    if (!(runMs >= 0)) return
    this.ring[this.next] = runMs
    this.next = (this.next + 1) % SKETCH_SIZE
    if (this.size < SKETCH_SIZE) this.size++
    this.cached = undefined
  }

  get count(): number {
    return this.size
  }

  /** The nearest-rank p50 and p90 of the runs kept; undefined before the first. */
  percentiles(): RunTime | undefined {
    if (this.size === 0) return undefined
    if (this.cached === undefined) {
      const sorted = this.ring.slice(0, this.size).sort()
      const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * this.size) - 1)]!
      this.cached = { p50Ms: rank(0.5), p90Ms: rank(0.9) }
    }
    return this.cached
  }
}
