import type { Metric } from "effect"

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

const typeOf = (type: Metric.Metric.Type): Family["type"] =>
  type === "Counter" || type === "Frequency"
    ? "counter"
    : type === "Gauge"
    ? "gauge"
    : type === "Histogram"
    ? "histogram"
    : "summary"

const samplesOf = (name: string, labels: Labels, snapshot: Metric.Metric.Snapshot): Array<string> => {
  switch (snapshot.type) {
    case "Counter":
      return [sample(name, labels, snapshot.state.count)]
    case "Gauge":
      return [sample(name, labels, snapshot.state.value)]
    case "Frequency":
      return [...snapshot.state.occurrences].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, count]) =>
        sample(name, [...labels, ["key", key]], count)
      )
    case "Histogram": {
      const { state } = snapshot
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
    case "Summary": {
      const { state } = snapshot
      return [
        ...state.quantiles.flatMap(([quantile, value]) =>
          value === undefined ? [] : [sample(name, [...labels, ["quantile", formatValue(quantile)]], value)]
        ),
        sample(`${name}_sum`, labels, state.sum),
        sample(`${name}_count`, labels, state.count)
      ]
    }
  }
}

const compareSeries = (a: Labels, b: Labels): number => {
  const ka = a.map(([k, v]) => `${k}\u0000${v}`).join("\u0001")
  const kb = b.map(([k, v]) => `${k}\u0000${v}`).join("\u0001")
  return ka < kb ? -1 : ka > kb ? 1 : 0
}

/**
 * Effect metrics (Metric.snapshot) in the Prometheus text exposition format (version 0.0.4): one HELP and TYPE
 * line per metric name, then its series sorted by labels. Histograms give cumulative
 * `_bucket{le=...}` lines ending with `le="+Inf"`, then `_sum` and `_count`; frequencies become
 * counters with a `key` label. A name met with two types keeps the first.
 */
export const renderPrometheus = (snapshots: ReadonlyArray<Metric.Metric.Snapshot>): string => {
  const families = new Map<string, Family>()
  const series = new Map<string, Array<{ readonly labels: Labels; readonly snapshot: Metric.Metric.Snapshot }>>()
  for (const snapshot of snapshots) {
    const type = typeOf(snapshot.type)
    const name = metricName(snapshot.id)
    const known = families.get(name)
    if (known !== undefined && known.type !== type) continue
    if (known === undefined) {
      families.set(name, { name, type, help: snapshot.description })
    }
    const labels = Object.entries(snapshot.attributes ?? {})
    const list = series.get(name) ?? []
    list.push({ labels: labels.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)), snapshot })
    series.set(name, list)
  }
  const out: Array<string> = []
  for (const name of [...families.keys()].sort()) {
    const family = families.get(name)!
    if (family.help !== undefined) out.push(`# HELP ${name} ${escapeHelp(family.help)}`)
    out.push(`# TYPE ${name} ${family.type}`)
    for (const { labels, snapshot } of series.get(name)!.sort((a, b) => compareSeries(a.labels, b.labels))) {
      out.push(...samplesOf(name, labels, snapshot))
    }
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}
