/** Money, times and lists as the dashboard shows and reads them. */

const MICRO_CENTS_PER_DOLLAR = 1_000_000

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 })

/** @param {number} microCents */
export const money = (microCents) => usd.format(microCents / MICRO_CENTS_PER_DOLLAR)

/**
 * Dollars typed by the operator as micro-cents; NaN when it is not a number with at most six decimals.
 * @param {string} text
 */
export const dollarsToMicroCents = (text) => {
  const trimmed = text.trim()
  if (!/^\d+(\.\d{1,6})?$/.test(trimmed)) return Number.NaN
  return Math.round(Number(trimmed) * MICRO_CENTS_PER_DOLLAR)
}

/** @param {string | number | null | undefined} value ISO 8601 or epoch milliseconds */
export const time = (value) => {
  if (value === null || value === undefined) return "—"
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString()
}

/**
 * "a, b\nc" as ["a", "b", "c"].
 * @param {string} text
 */
export const listOf = (text) => text.split(/[\n,]/).map((s) => s.trim()).filter((s) => s !== "")

/**
 * A datetime-local input's value as ISO 8601 (local time), or undefined when empty.
 * @param {string} value
 */
export const localToIso = (value) => (value === "" ? undefined : new Date(value).toISOString())

/** @param {string | undefined} status */
export const isTerminal = (status) => status === "completed" || status === "failed" || status === "cancelled"
