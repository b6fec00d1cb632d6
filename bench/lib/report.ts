/**
 * One JSON line per figure, the engine's number beside its reference measured in the same run.
 * `ratio` is engine / reference whatever the unit, and `better` says which way is good, so a
 * reader never has to guess whether 0.7 is a win.
 */
export interface Figure {
  readonly figure: string
  readonly engine: number
  readonly reference: number | null
  readonly unit: string
  readonly better: "higher" | "lower"
  /** What the reference is: another system measured now, or a fixed target. */
  readonly referenceIs: string
  /** The goal for this ratio, for context. */
  readonly target?: string
  readonly params: Record<string, unknown>
}

const round = (n: number) => (Math.abs(n) >= 100 ? Math.round(n) : Math.round(n * 1000) / 1000)

export const emit = (f: Figure): void => {
  const ratio = f.reference === null || f.reference === 0 ? null : round(f.engine / f.reference)
  console.log(JSON.stringify({
    figure: f.figure,
    engine: round(f.engine),
    reference: f.reference === null ? null : round(f.reference),
    ratio,
    unit: f.unit,
    better: f.better,
    referenceIs: f.referenceIs,
    ...(f.target === undefined ? {} : { target: f.target }),
    params: f.params
  }))
}

/** Nearest-rank percentile of samples (any order). */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export const ms = (n: number) => Math.round(n * 1000) / 1000

/** Progress goes to stderr so stdout stays JSON lines only. */
export const log = (message: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}
