/**
 * Budgets on an account and its keys: what the current period has spent against the limit (from
 * the spend rollups, GET /admin/spend), when it resets, and a form to set, change or remove one.
 */
import { html } from "htm/preact"
import { useState } from "preact/hooks"
import { seg, withQuery } from "./api.js"
import { dollarsToMicroCents, money, time } from "./format.js"
import { ErrorMessage } from "./ui.js"

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
/** The longest range one spend read takes (docs/admin-api.md#spend). */
const MAX_RANGE_MS = 366 * DAY_MS

const PERIODS = [
  ["day", "per day (UTC)"],
  ["month", "per month (UTC)"],
  ["total", "in total (never resets)"]
]

/**
 * Where the period holding `now` starts, and where it ends (null: `total` never does), as the
 * engine counts them (src/domain/budget.ts): UTC days and months.
 * @param {string} period
 * @param {number} now
 * @param {number} createdAt when the budget's owner was made: a total counts from there
 */
export const periodOf = (period, now, createdAt) => {
  const at = new Date(now)
  if (period === "day") {
    const start = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())
    return { start, end: start + DAY_MS }
  }
  if (period === "month") {
    return { start: Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1), end: Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1) }
  }
  return { start: Math.floor(createdAt / HOUR_MS) * HOUR_MS, end: null }
}

/**
 * What the account and each of its keys spent in the current period of each budget period in
 * use: `spent[period].account`, `spent[period].keys.get(keyId)`. A total longer than one read's
 * range is read in 366-day steps.
 * @param {import("./api.js").Call} api
 * @param {any} account
 * @param {Array<any>} keys
 */
export const loadBudgetSpend = async (api, account, keys) => {
  const now = Date.now()
  const periods = [...new Set([account.budget?.period, ...keys.map((k) => k.budget?.period)].filter((p) => p !== undefined && p !== null))]
  /** @type {Record<string, { account: number, keys: Map<string, number> }>} */
  const spent = {}
  for (const period of periods) {
    const { start } = periodOf(period, now, Date.parse(account.createdAt))
    const to = Math.floor(now / HOUR_MS) * HOUR_MS + HOUR_MS
    const byKey = new Map()
    let total = 0
    for (let from = start; from < to; from += MAX_RANGE_MS) {
      const answer = await api("GET", withQuery("admin/spend", {
        accountId: account.id,
        groupBy: "key",
        from: new Date(from).toISOString(),
        to: new Date(Math.min(to, from + MAX_RANGE_MS)).toISOString()
      }))
      for (const g of answer.groups) {
        byKey.set(g.key, (byKey.get(g.key) ?? 0) + g.spentMicroCents)
        total += g.spentMicroCents
      }
    }
    spent[period] = { account: total, keys: byKey }
  }
  return spent
}

/**
 * A budget as a bar: spent of the limit in this period, and when it resets.
 * @param {{ budget: any, spent: number | undefined, createdAt: string, label: string, testId: string }} props
 */
export const BudgetBar = ({ budget, createdAt, label, spent, testId }) => {
  if (budget === null || budget === undefined) return html`<span class="muted" data-testid=${testId}>No budget</span>`
  const { end } = periodOf(budget.period, Date.now(), Date.parse(createdAt))
  const limit = budget.limitMicroCents
  const known = spent ?? 0
  const over = known >= limit
  return html`<span class="budget" data-testid=${testId}>
    <meter min="0" max=${Math.max(limit, 1)} value=${Math.min(known, Math.max(limit, 1))} high=${limit * 0.8} optimum="0"
      aria-label=${`${label}: ${money(known)} of ${money(limit)} spent`}></meter>
    <span class="budget-text">${spent === undefined ? "…" : money(spent)} of ${money(limit)} ${budget.period === "total" ? "in total" : `this ${budget.period}`}${over ? " (reached)" : ""}</span>
    <span class="muted">${end === null ? "never resets" : `resets ${time(end)}`}</span>
  </span>`
}

/**
 * Set, change or remove a budget; `save` sends `{budget}` through the owner's PATCH.
 * @param {{ id: string, budget: any, what: string, save: (budget: any) => Promise<void> }} props
 */
export const BudgetForm = ({ budget, id, save, what }) => {
  const [error, setError] = useState(/** @type {any} */ (null))
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const data = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    const limitMicroCents = dollarsToMicroCents(String(data.get("limit") ?? ""))
    if (Number.isNaN(limitMicroCents)) {
      setError({ code: "VALIDATION_ERROR", message: "The limit must be an amount in dollars, such as 50 or 2.50." })
      return
    }
    try {
      await save({ limitMicroCents, period: String(data.get("period")) })
      setError(null)
    } catch (e) {
      setError(e)
    }
  }
  const remove = async () => {
    try {
      await save(null)
      setError(null)
    } catch (e) {
      setError(e)
    }
  }
  return html`<form class="inline" onSubmit=${submit} aria-label=${`Budget of ${what}`}>
    <label for=${`${id}-limit`}>Budget of ${what} (USD)</label>
    <input id=${`${id}-limit`} name="limit" inputmode="decimal" required size="8"
      defaultValue=${budget ? String(budget.limitMicroCents / 1_000_000) : ""} placeholder="50.00" />
    <label for=${`${id}-period`} class="sr-only">Budget period of ${what}</label>
    <select id=${`${id}-period`} name="period">
      ${PERIODS.map(([value, text]) => html`<option value=${value} selected=${(budget?.period ?? "month") === value}>${text}</option>`)}
    </select>
    <button type="submit">${budget ? "Change budget" : "Set budget"}</button>
    ${budget && html`<button type="button" class="secondary" onClick=${remove}>Remove budget</button>`}
    <${ErrorMessage} error=${error} />
  </form>`
}

/**
 * A creation form's optional budget fields, `budgetLimit` (dollars) and `budgetPeriod`, read back
 * by `budgetOf`; `id` prefixes the inputs' ids.
 * @param {{ id: string }} props
 */
export const BudgetFields = ({ id }) => html`<label for=${id}>Budget (USD, optional)</label>
  <span class="inline">
    <input id=${id} name="budgetLimit" inputmode="decimal" size="8" />
    <label for=${`${id}-period`} class="sr-only">Budget period</label>
    <select id=${`${id}-period`} name="budgetPeriod">
      ${PERIODS.map(([value, text]) => html`<option value=${value} selected=${value === "month"}>${text}</option>`)}
    </select>
  </span>`

/**
 * A creation form's optional budget fields (`budgetLimit` in dollars, `budgetPeriod`) as the body's
 * `budget`: nothing when the limit is empty. A limit that is not an amount goes as it is, so the
 * API refuses it with its reason and nothing is created.
 * @param {FormData} data
 */
export const budgetOf = (data) => {
  const limit = String(data.get("budgetLimit") ?? "").trim()
  if (limit === "") return {}
  const microCents = dollarsToMicroCents(limit)
  return { budget: { limitMicroCents: Number.isNaN(microCents) ? limit : microCents, period: String(data.get("budgetPeriod")) } }
}

/**
 * The PATCH that sets a key's budget.
 * @param {import("./api.js").Call} api
 * @param {string} keyId
 * @param {any} budget
 */
export const patchKeyBudget = (api, keyId, budget) => api("PATCH", `admin/keys/${seg(keyId)}`, { budget })
