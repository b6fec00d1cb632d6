/**
 * Usage: spend per day by model and by key, jobs per hour by outcome and the failure rate (the
 * spend rollups, GET /admin/spend), run times per model and the queue now (GET /admin/stats).
 */
import { html } from "htm/preact"
import { seg, withQuery } from "./api.js"
import { GroupedBars, Lines, StackedBars } from "./charts.js"
import { money } from "./format.js"
import { ErrorMessage, PageTitle, useLoad, usePolling } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
/** The hours the hourly charts cover, ending with the current one. */
const HOURS = 48
/** Series beyond these are summed into one, so every colour stays distinct. */
const MAX_SERIES = 7
/** Key names are looked up for the keys of at most this many accounts; others show their id. */
const MAX_KEY_ACCOUNTS = 20
const RANGES = [7, 14, 30, 90]

/** @param {number} ms */
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10)
/** @param {number} ms */
const isoHour = (ms) => new Date(ms).toISOString()

/** @param {number} ms */
const duration = (ms) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`)
/** @param {number} n */
const percent = (n) => `${n.toFixed(1)}%`
/** @param {number} n */
const count = (n) => String(Math.round(n))

/**
 * Series of `value` per `category`, by `name`: the largest first, the smallest summed into "Other".
 * @param {Array<any>} groups
 * @param {Array<string>} categories
 * @param {(g: any) => string} categoryOf
 * @param {(g: any) => string} nameOf
 * @param {(g: any) => number} valueOf
 * @returns {Array<import("./charts.js").Series>}
 */
const seriesBy = (groups, categories, categoryOf, nameOf, valueOf) => {
  const index = new Map(categories.map((c, i) => [c, i]))
  /** @type {Map<string, Array<number>>} */
  const byName = new Map()
  for (const g of groups) {
    const i = index.get(categoryOf(g))
    if (i === undefined) continue
    const name = nameOf(g)
    const values = byName.get(name) ?? categories.map(() => 0)
    values[i] = (values[i] ?? 0) + valueOf(g)
    byName.set(name, values)
  }
  const total = (/** @type {Array<number>} */ v) => v.reduce((a, b) => a + b, 0)
  const sorted = [...byName.entries()].sort((a, b) => total(b[1]) - total(a[1]) || (a[0] < b[0] ? -1 : 1))
  const kept = sorted.slice(0, MAX_SERIES).map(([name, values]) => ({ name, values }))
  const rest = sorted.slice(MAX_SERIES)
  if (rest.length === 0) return kept
  return [...kept, { name: `${rest.length} others`, values: categories.map((_, i) => total(rest.map(([, v]) => v[i] ?? 0))) }]
}

/**
 * Key ids as "name (gjk_AbCd…)", read from the key lists of the accounts that spent.
 * @param {import("./api.js").Call} api
 * @param {Array<any>} groups spend grouped by account and key
 */
const keyNames = async (api, groups) => {
  const accounts = [...new Set(groups.map((g) => g.account))].slice(0, MAX_KEY_ACCOUNTS)
  const lists = await Promise.all(accounts.map((id) => api("GET", `admin/accounts/${seg(id)}/keys`).catch(() => ({ keys: [] }))))
  return new Map(lists.flatMap((l) => l.keys.map((/** @type {any} */ k) => [k.id, `${k.name} (${k.hint}…)`])))
}

/**
 * @param {import("./api.js").Call} api
 * @param {number} days
 * @param {string | undefined} accountId
 */
const loadUsage = async (api, days, accountId) => {
  const now = Date.now()
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS
  const firstHour = Math.floor(now / HOUR_MS) * HOUR_MS - (HOURS - 1) * HOUR_MS
  const to = Math.floor(now / HOUR_MS) * HOUR_MS + HOUR_MS
  const spend = (/** @type {string} */ groupBy, /** @type {number} */ from) =>
    api("GET", withQuery("admin/spend", { groupBy, from: new Date(from).toISOString(), to: new Date(to).toISOString(), accountId }))
  const [byModel, byKey, keyAccounts, byHour] = await Promise.all([
    spend("day,model", firstDay),
    spend("day,key", firstDay),
    spend("account,key", firstDay),
    spend("hour", firstHour)
  ])
  const names = await keyNames(api, keyAccounts.groups)
  const dayList = Array.from({ length: days }, (_, i) => isoDay(firstDay + i * DAY_MS))
  const hourList = Array.from({ length: HOURS }, (_, i) => isoHour(firstHour + i * HOUR_MS))
  const hourly = new Map(byHour.groups.map((/** @type {any} */ g) => [g.hour, g]))
  const at = (/** @type {string} */ hour, /** @type {string} */ field) => hourly.get(hour)?.[field] ?? 0
  return {
    from: firstDay,
    days: dayList,
    hours: hourList,
    spendByModel: seriesBy(byModel.groups, dayList, (g) => g.day, (g) => g.model, (g) => g.spentMicroCents),
    spendByKey: seriesBy(byKey.groups, dayList, (g) => g.day, (g) => (g.key === null ? "(no key recorded)" : names.get(g.key) ?? g.key), (g) => g.spentMicroCents),
    outcomes: [
      { name: "Completed or running", values: hourList.map((h) => at(h, "jobs") - at(h, "failed") - at(h, "cancelled")) },
      { name: "Failed", values: hourList.map((h) => at(h, "failed")) },
      { name: "Cancelled", values: hourList.map((h) => at(h, "cancelled")) }
    ],
    failureRate: [{ name: "Failed", values: hourList.map((h) => (at(h, "jobs") === 0 ? 0 : (100 * at(h, "failed")) / at(h, "jobs"))) }]
  }
}

/** @param {string} day */
const dayTick = (day) => day.slice(5)
/** @param {string} hour */
const hourTick = (hour) => `${hour.slice(11, 13)}h`

/**
 * The queue now and run times, read again every 5 seconds while the tab is visible.
 * @param {{ api: import("./api.js").Call, from: number }} props
 */
const QueueAndRunTimes = ({ api, from }) => {
  const stats = useLoad(() => api("GET", withQuery("admin/stats", { from: new Date(from).toISOString() })), [from])
  usePolling(stats.reload, 5000, true)
  const s = stats.data
  return html`
    <${ErrorMessage} error=${stats.error} />
    ${s !== undefined && html`<div>
      <${StackedBars} id="chart-queue" title="Jobs waiting and in flight now, across accounts"
        summary=${`${s.pendingJobs} jobs wait for a worker and ${s.processingJobs} are running.`}
        categoryLabel="State" categories=${["Waiting", "In flight"]} format=${count} integers=${true}
        series=${[{ name: "Jobs", values: [s.pendingJobs, s.processingJobs] }]} />
      <dl class="summary now">
        <dt>Waiting (queue depth)</dt><dd data-testid="queue-depth">${s.pendingJobs}</dd>
        <dt>In flight (processing)</dt><dd data-testid="in-flight">${s.processingJobs}</dd>
        <dt>Read at</dt><dd>${new Date(s.at).toLocaleTimeString()}</dd>
      </dl>
      </div>
      <${GroupedBars} id="chart-runtime" title="Run time per model, p50 and p95 (completed jobs of the range)"
        summary=${s.runTimes.map((/** @type {any} */ r) => `${r.model}: median ${duration(r.p50Ms)}, p95 ${duration(r.p95Ms)} over ${r.jobs} jobs`).join("; ") ||
          "No job completed in this range."}
        categoryLabel="Model" categories=${s.runTimes.map((/** @type {any} */ r) => r.model)} format=${duration}
        series=${[
          { name: "p50", values: s.runTimes.map((/** @type {any} */ r) => r.p50Ms) },
          { name: "p95", values: s.runTimes.map((/** @type {any} */ r) => r.p95Ms) }
        ]} />`}`
}

/**
 * One sentence of a series' totals, for the SVG's description.
 * @param {Array<import("./charts.js").Series>} series
 * @param {(n: number) => string} format
 */
const totalsSentence = (series, format) =>
  series.length === 0 ? "Nothing in this range." : `Totals: ${series.map((s) => `${s.name} ${format(s.values.reduce((a, b) => a + b, 0))}`).join(", ")}.`

/** @param {ViewProps} props */
export const UsageView = ({ api, query }) => {
  const days = RANGES.includes(Number(query.get("days"))) ? Number(query.get("days")) : 14
  const accountId = query.get("accountId") ?? undefined
  const usage = useLoad(() => loadUsage(api, days, accountId), [days, accountId])
  usePolling(usage.reload, 30_000, true)
  const u = usage.data
  const categoriesOf = (/** @type {Array<import("./charts.js").Series>} */ series, /** @type {Array<string>} */ all) => (series.length === 0 ? [] : all)
  return html`
    <${PageTitle}>Usage${accountId === undefined ? "" : html` of <code>${accountId}</code>`}<//>
    <form class="filters" onSubmit=${(/** @type {SubmitEvent} */ e) => e.preventDefault()}>
      <div>
        <label for="usage-days">Days</label>
        <select id="usage-days" value=${days} onChange=${(/** @type {any} */ e) => {
          location.hash = withQuery("#/usage", { days: e.currentTarget.value, accountId })
        }}>
          ${RANGES.map((d) => html`<option value=${d}>Last ${d} days</option>`)}
        </select>
      </div>
      ${accountId !== undefined && html`<div class="actions"><a href=${withQuery("#/usage", { days })}>All accounts</a></div>`}
    </form>
    <p class="muted">Spend is charges less refunds, counted in the UTC hour and day each job was submitted. Charts redraw every 30 seconds; the queue every 5.</p>
    <${ErrorMessage} error=${usage.error} />
    ${u === undefined && usage.error === null && html`<p>Loading…</p>`}
    ${u !== undefined && html`<div class="charts">
      <${StackedBars} id="chart-spend-model" title="Spend per day by model" categoryLabel="Day (UTC)" tick=${dayTick}
        summary=${totalsSentence(u.spendByModel, money)} format=${money}
        categories=${categoriesOf(u.spendByModel, u.days)} series=${u.spendByModel} />
      <${StackedBars} id="chart-spend-key" title="Spend per day by API key" categoryLabel="Day (UTC)" tick=${dayTick}
        summary=${totalsSentence(u.spendByKey, money)} format=${money}
        categories=${categoriesOf(u.spendByKey, u.days)} series=${u.spendByKey} />
      <${StackedBars} id="chart-outcomes" title=${`Jobs per hour by outcome, last ${HOURS} hours`} categoryLabel="Hour (UTC)" tick=${hourTick}
        summary=${totalsSentence(u.outcomes, count)} format=${count} integers=${true} categories=${u.hours} series=${u.outcomes} />
      <${Lines} id="chart-failure-rate" title=${`Failure rate per hour, last ${HOURS} hours`} categoryLabel="Hour (UTC)" tick=${hourTick}
        summary="Failed jobs as a share of the jobs submitted in each hour; 0 where none were submitted." format=${percent} max=${100}
        categories=${u.hours} series=${u.failureRate} />
      <${QueueAndRunTimes} api=${api} from=${u.from} />
    </div>`}
  `
}
