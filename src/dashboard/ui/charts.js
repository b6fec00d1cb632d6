/**
 * SVG charts drawn by Preact with d3-scale (positions, ticks) and d3-shape (stacks, lines). Each
 * chart is a figure with a title, an SVG the screen reader reads as one image with its title and
 * summary, and a table of the same numbers: hidden visually unless the operator asks for it,
 * always there for screen readers and for copying the numbers.
 */
import { html } from "htm/preact"
import { useState } from "preact/hooks"
import { scaleBand, scaleLinear } from "d3-scale"
import { line, stack } from "d3-shape"

/**
 * @typedef {{ name: string, values: Array<number> }} Series one value per category
 * @typedef {{ id: string, title: string, summary: string, categories: Array<string>, series: Array<Series>,
 *   format: (n: number) => string, categoryLabel: string, tick?: (category: string) => string, integers?: boolean }} ChartProps
 *   `integers`: the values are counts, so the axis marks whole numbers only
 */

/** Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito's palette). */
const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]

/** @param {number} i */
export const colourOf = (i) => COLOURS[i % COLOURS.length] ?? "#000000"

const WIDTH = 720
const HEIGHT = 260
const MARGIN = { top: 12, right: 16, bottom: 36, left: 72 }

/** @param {Array<number>} values */
const sum = (values) => values.reduce((a, b) => a + b, 0)

/**
 * The same numbers as a table: a row per category, a column per series, totals last.
 * @param {ChartProps & { shown: boolean, totals: boolean }} props
 */
const ChartTable = ({ categories, categoryLabel, format, id, series, shown, title, totals }) => html`
  <div class=${shown ? "chart-table" : "chart-table sr-only"} id=${`${id}-table`}>
  <table data-testid=${`${id}-table`}>
    <caption>${title}</caption>
    <thead><tr>
      <th scope="col">${categoryLabel}</th>
      ${series.map((s) => html`<th scope="col" class="num">${s.name}</th>`)}
      ${totals && series.length > 1 && html`<th scope="col" class="num">Total</th>`}
    </tr></thead>
    <tbody>
      ${categories.map((c, i) => html`<tr>
        <th scope="row">${c}</th>
        ${series.map((s) => html`<td class="num">${format(s.values[i] ?? 0)}</td>`)}
        ${totals && series.length > 1 && html`<td class="num">${format(sum(series.map((s) => s.values[i] ?? 0)))}</td>`}
      </tr>`)}
    </tbody>
    ${totals && html`<tfoot><tr>
      <th scope="row">Total</th>
      ${series.map((s) => html`<td class="num">${format(sum(s.values))}</td>`)}
      ${series.length > 1 && html`<td class="num" data-testid=${`${id}-total`}>${format(sum(series.map((s) => sum(s.values))))}</td>`}
    </tr></tfoot>`}
  </table>
  </div>`

/**
 * A chart's frame: its heading, the SVG, the legend, and the table toggle.
 * @param {ChartProps & { children: any, totals: boolean, legend: boolean }} props
 */
const Figure = (props) => {
  const [shown, setShown] = useState(false)
  const { children, id, legend, series, summary, title } = props
  return html`<figure class="chart" aria-labelledby=${`${id}-title`} data-testid=${id}>
    <figcaption><h2 id=${`${id}-title`}>${title}</h2></figcaption>
    ${props.categories.length === 0
      ? html`<p class="muted">No data in this range.</p>`
      : html`
        <svg viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby=${`${id}-svg-title ${id}-svg-desc`}>
          <title id=${`${id}-svg-title`}>${title}</title>
          <desc id=${`${id}-svg-desc`}>${summary}</desc>
          ${children}
        </svg>
        ${legend && html`<ul class="legend" aria-hidden="true">
          ${series.map((s, i) => html`<li><span class="swatch" style=${`background:${colourOf(i)}`}></span>${s.name}</li>`)}
        </ul>`}
        <button type="button" class="secondary" aria-expanded=${shown} aria-controls=${`${id}-table`} onClick=${() => setShown(!shown)}>
          ${shown ? "Hide the table" : "Show as a table"}
        </button>`}
    ${props.categories.length > 0 && html`<${ChartTable} ...${props} shown=${shown} />`}
  </figure>`
}

/**
 * The y axis's gridlines and labels, and the x axis's labels (at most about 12).
 * @param {{ x: any, y: any, categories: Array<string>, format: (n: number) => string, tick?: (c: string) => string, integers?: boolean }} props
 */
const Axes = ({ categories, format, integers, tick, x, y }) => {
  const every = Math.max(1, Math.ceil(categories.length / 12))
  const marks = y.ticks(5).filter((/** @type {number} */ t) => !integers || Number.isInteger(t))
  return html`<g class="axis" aria-hidden="true">
    ${marks.map((/** @type {number} */ t) => html`<g>
      <line x1=${MARGIN.left} x2=${WIDTH - MARGIN.right} y1=${y(t)} y2=${y(t)} class="grid" />
      <text x=${MARGIN.left - 6} y=${y(t)} dy="0.32em" text-anchor="end">${format(t)}</text>
    </g>`)}
    ${categories.map((c, i) => i % every === 0 && html`<text x=${x(c) + x.bandwidth() / 2} y=${HEIGHT - MARGIN.bottom + 16} text-anchor="middle">
      ${tick === undefined ? c : tick(c)}
    </text>`)}
  </g>`
}

/** @param {Array<string>} categories */
const xScale = (categories) => scaleBand().domain(categories).range([MARGIN.left, WIDTH - MARGIN.right]).padding(0.2)

/** @param {number} max */
const yScale = (max) => scaleLinear().domain([0, max > 0 ? max : 1]).nice().range([HEIGHT - MARGIN.bottom, MARGIN.top])

/**
 * Bars per category, the series stacked on each other (one series: plain bars).
 * @param {ChartProps} props
 */
export const StackedBars = (props) => {
  const { categories, series } = props
  const rows = categories.map((c, i) => Object.fromEntries([["category", c], ...series.map((s) => [s.name, s.values[i] ?? 0])]))
  const layers = stack().keys(series.map((s) => s.name))(rows)
  const x = xScale(categories)
  const y = yScale(Math.max(0, ...categories.map((_, i) => sum(series.map((s) => s.values[i] ?? 0)))))
  return html`<${Figure} ...${props} totals=${true} legend=${series.length > 1}>
    <${Axes} x=${x} y=${y} categories=${categories} format=${props.format} tick=${props.tick} integers=${props.integers} />
    ${layers.map((/** @type {any} */ layer, /** @type {number} */ i) => html`<g fill=${colourOf(i)} class="series">
      ${layer.map((/** @type {any} */ d) => html`<rect x=${x(d.data.category)} width=${x.bandwidth()} y=${y(d[1])}
        height=${Math.max(0, y(d[0]) - y(d[1]))} />`)}
    </g>`)}
  <//>`
}

/**
 * Bars side by side per category, one per series (p50 beside p95).
 * @param {ChartProps} props
 */
export const GroupedBars = (props) => {
  const { categories, series } = props
  const x = xScale(categories)
  const inner = scaleBand().domain(series.map((s) => s.name)).range([0, x.bandwidth()]).padding(0.1)
  const y = yScale(Math.max(0, ...series.flatMap((s) => s.values)))
  return html`<${Figure} ...${props} totals=${false} legend=${series.length > 1}>
    <${Axes} x=${x} y=${y} categories=${categories} format=${props.format} tick=${props.tick} integers=${props.integers} />
    ${series.map((s, i) => html`<g fill=${colourOf(i)} class="series">
      ${categories.map((c, j) => html`<rect x=${(x(c) ?? 0) + (inner(s.name) ?? 0)} width=${inner.bandwidth()} y=${y(s.values[j] ?? 0)}
        height=${Math.max(0, y(0) - y(s.values[j] ?? 0))} />`)}
    </g>`)}
  <//>`
}

/**
 * A line per series over the categories, a dot on each value.
 * @param {ChartProps & { max?: number }} props
 */
export const Lines = (props) => {
  const { categories, series } = props
  const x = xScale(categories)
  const y = yScale(props.max ?? Math.max(0, ...series.flatMap((s) => s.values)))
  const at = (/** @type {number} */ i) => (x(categories[i]) ?? 0) + x.bandwidth() / 2
  const path = line().x((/** @type {any} */ d) => at(d[0])).y((/** @type {any} */ d) => y(d[1]))
  return html`<${Figure} ...${props} totals=${false} legend=${series.length > 1}>
    <${Axes} x=${x} y=${y} categories=${categories} format=${props.format} tick=${props.tick} integers=${props.integers} />
    ${series.map((s, i) => html`<g class="series">
      <path d=${path(s.values.map((v, j) => [j, v]))} fill="none" stroke=${colourOf(i)} stroke-width="2" />
      ${s.values.map((v, j) => html`<circle cx=${at(j)} cy=${y(v)} r="3" fill=${colourOf(i)} />`)}
    </g>`)}
  <//>`
}
