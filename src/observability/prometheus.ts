import { type MetricPair, MetricState, Option } from "effect"

/** The media type of the Prometheus text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

type Labels = ReadonlyArray<readonly [string, string]>

interface Family {
  readonly name: string
  readonly type: "counter" | "gauge" | "histogram" | "summary"
  readonly help: string | undefined
}

/** Metric and label names allow [a-zA-Z0-9_:] (labels no colon), not starting with a digit. */
export const metricName = (name: string): string => {
  const cleaned = name.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned
}
const labelName = (name: string): string => {
  const cleaned = name.replace(/[^a-zA-Z0-9_]/g, "_")
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned
}

const escapeLabelValue = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

export const formatValue = (value: number | bigint): string => {
  if (typeof value === "bigint") return value.toString()
  if (Number.isNaN(value)) return "NaN"
  if (value === Number.POSITIVE_INFINITY) return "+Inf"
  if (value === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(value)
}

const sample = (name: string, labels: Labels, value: number | bigint): string => {
  const rendered = labels.map(([k, v]) => `${labelName(k)}="${escapeLabelValue(v)}"`).join(",")
  return `${name}${rendered === "" ? "" : `{${rendered}}`} ${formatValue(value)}`
}

const typeOf = (state: unknown): Family["type"] | undefined =>
  MetricState.isCounterState(state) || MetricState.isFrequencyState(state)
    ? "counter"
    : MetricState.isGaugeState(state)
    ? "gauge"
    : MetricState.isHistogramState(state)
    ? "histogram"
    : MetricState.isSummaryState(state)
    ? "summary"
    : undefined

const samplesOf = (name: string, labels: Labels, state: unknown): Array<string> => {
  if (MetricState.isCounterState(state)) return [sample(name, labels, state.count)]
  if (MetricState.isGaugeState(state)) return [sample(name, labels, state.value)]
  if (MetricState.isFrequencyState(state)) {
    return [...state.occurrences].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, count]) =>
      sample(name, [...labels, ["key", key]], count)
    )
  }
  if (MetricState.isHistogramState(state)) {
    const buckets = state.buckets.filter(([bound]) => bound !== Number.POSITIVE_INFINITY).map(([bound, count]) =>
      sample(`${name}_bucket`, [...labels, ["le", formatValue(bound)]], count)
    )
    return [
      ...buckets,
      // Every histogram ends with the +Inf bucket, which holds every observation.
      sample(`${name}_bucket`, [...labels, ["le", "+Inf"]], state.count),
      sample(`${name}_sum`, labels, state.sum),
      sample(`${name}_count`, labels, state.count)
    ]
  }
  if (MetricState.isSummaryState(state)) {
    return [
      ...state.quantiles.flatMap(([quantile, value]) =>
        Option.isSome(value) ? [sample(name, [...labels, ["quantile", formatValue(quantile)]], value.value)] : []
      ),
      sample(`${name}_sum`, labels, state.sum),
      sample(`${name}_count`, labels, state.count)
    ]
  }
  return []
}

const compareSeries = (a: Labels, b: Labels): number => {
  const ka = a.map(([k, v]) => `${k}\u0000${v}`).join("\u0001")
  const kb = b.map(([k, v]) => `${k}\u0000${v}`).join("\u0001")
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

/**
 * Effect metrics in the Prometheus text exposition format (version 0.0.4): one HELP and TYPE
 * line per metric name, then its series sorted by labels. Histograms give cumulative
 * `_bucket{le=...}` lines ending with `le="+Inf"`, then `_sum` and `_count`; frequencies become
 * counters with a `key` label. A name met with two types keeps the first.
 */
export const renderPrometheus = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  const series = new Map<string, Array<{ readonly labels: Labels; readonly state: unknown }>>()
  for (const pair of pairs) {
    const type = typeOf(pair.metricState)
    if (type === undefined) continue
    const name = metricName(pair.metricKey.name)
    const known = families.get(name)
    if (known !== undefined && known.type !== type) continue
    if (known === undefined) {
      families.set(name, { name, type, help: Option.getOrUndefined(pair.metricKey.description) })
    }
    const labels = pair.metricKey.tags.map((tag) => [tag.key, tag.value] as const)
    const list = series.get(name) ?? []
    list.push({ labels: [...labels].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)), state: pair.metricState })
    series.set(name, list)
  }
  const out: Array<string> = []
  for (const name of [...families.keys()].sort()) {
    const family = families.get(name)!
    if (family.help !== undefined) out.push(`# HELP ${name} ${escapeHelp(family.help)}`)
    out.push(`# TYPE ${name} ${family.type}`)
    for (const { labels, state } of series.get(name)!.sort((a, b) => compareSeries(a.labels, b.labels))) {
      out.push(...samplesOf(name, labels, state))
    }
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}
