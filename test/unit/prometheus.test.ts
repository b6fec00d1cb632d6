import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"
import { renderPrometheus } from "../../src/observability/prometheus.js"

let n = 0
/** Each test's metrics get names of their own: the registry is global. */
const unique = (base: string) => `${base}_${process.pid}_${++n}`

const render = (prefix: string) =>
  renderPrometheus(Effect.runSync(Metric.snapshot).filter((snapshot) => snapshot.id.startsWith(prefix)))

/**
 * A strict reader of the text format: every line is a comment (HELP/TYPE) or
 * `name{label="value",...} number`, label values escaped; answers the samples.
 */
const parse = (text: string) => {
  expect(text.endsWith("\n")).toBe(true)
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = []
  const types = new Map<string, string>()
  for (const line of text.slice(0, -1).split("\n")) {
    if (line.startsWith("# HELP ")) {
      expect(line).toMatch(/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/)
      continue
    }
    if (line.startsWith("# TYPE ")) {
      const [, name, type] = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line)!
      expect(types.has(name!)).toBe(false)
      types.set(name!, type!)
      continue
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    for (const [, key, raw] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))
    }
    const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3])
    expect(Number.isNaN(value) && match[3] !== "NaN").toBe(false)
    samples.push({ name: match[1]!, labels, value })
  }
  return { samples, types }
}

describe("renderPrometheus", () => {
  it("writes HELP and TYPE once per name and one line per labelled series", () => {
    const name = unique("t_requests_total")
    const counter = Metric.counter(name, { description: "Requests\nby route, with a \\ backslash" })
    Effect.runSync(Effect.all([
      Metric.update(Metric.withAttributes(counter, { route: "/v1/jobs" }), 3),
      Metric.update(Metric.withAttributes(counter, { route: "/v1/jobs/:jobId" }), 1)
    ]))
    const text = render(name)
    expect(text).toBe(
      [
        `# HELP ${name} Requests\\nby route, with a \\\\ backslash`,
        `# TYPE ${name} counter`,
        `${name}{route="/v1/jobs"} 3`,
        `${name}{route="/v1/jobs/:jobId"} 1`,
        ""
      ].join("\n")
    )
    expect(parse(text).samples).toHaveLength(2)
  })

  it("escapes backslashes, quotes and newlines in label values", () => {
    const name = unique("t_escapes")
    const gauge = Metric.gauge(name)
    Effect.runSync(Metric.update(Metric.withAttributes(gauge, { model: "a\"b\\c\nd" }), 2.5))
    const text = render(name)
    expect(text).toContain(`${name}{model="a\\"b\\\\c\\nd"} 2.5`)
    expect(text).not.toContain("# HELP")
    expect(parse(text).samples[0]).toEqual({ name, labels: { model: "a\"b\\c\nd" }, value: 2.5 })
  })

  it("renders histograms as cumulative buckets with le, ending at +Inf, then _sum and _count", () => {
    const name = unique("t_duration_seconds")
    const histogram = Metric.histogram(name, { boundaries: [0.1, 1, 10], description: "Durations" })
    const tagged = Metric.withAttributes(histogram, { model: "m" })
    Effect.runSync(Effect.forEach([0.05, 0.1, 0.5, 5, 50], (v) => Metric.update(tagged, v)))
    const text = render(name)
    expect(text).toBe(
      [
        `# HELP ${name} Durations`,
        `# TYPE ${name} histogram`,
        `${name}_bucket{model="m",le="0.1"} 2`,
        `${name}_bucket{model="m",le="1"} 3`,
        `${name}_bucket{model="m",le="10"} 4`,
        `${name}_bucket{model="m",le="+Inf"} 5`,
        `${name}_sum{model="m"} 55.65`,
        `${name}_count{model="m"} 5`,
        ""
      ].join("\n")
    )
    const { samples, types } = parse(text)
    expect(types.get(name)).toBe("histogram")
    const buckets = samples.filter((s) => s.name === `${name}_bucket`).map((s) => s.value)
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b))
  })

  it("sorts label names, cleans invalid names, and renders special numbers", () => {
    const name = unique("t.odd-name")
    const gauge = Metric.gauge(name)
    Effect.runSync(Metric.update(gauge.pipe(Metric.withAttributes({ z: "1" }), Metric.withAttributes({ a: "2" })), Number.POSITIVE_INFINITY))
    const text = render(name)
    const clean = name.replace(/[.-]/g, "_")
    expect(text).toContain(`# TYPE ${clean} gauge`)
    expect(text).toContain(`${clean}{a="2",z="1"} +Inf`)
    parse(text)
  })

  it("renders nothing for no metrics", () => {
    expect(renderPrometheus([])).toBe("")
  })
})
