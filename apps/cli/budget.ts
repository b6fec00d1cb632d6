import * as Effect from "effect/Effect"
import { CliError } from "./errors.js"
import { dollars } from "./output.js"

const PERIODS = ["day", "month", "total"]

/**
 * `--budget LIMIT/PERIOD` as the API's `budget`: `5000000/month` is $5 a month (micro-cents per
 * UTC day, month, or in total), `none` removes it (null), no option leaves it (undefined).
 * Anything else fails before a request is sent.
 */
export const readBudget = (text: string | undefined): Effect.Effect<{ limitMicroCents: number; period: string } | null | undefined, CliError> => {
  if (text === undefined) return Effect.succeed(undefined)
  if (text === "none") return Effect.succeed(null)
  const match = /^(\d+)\/(\w+)$/.exec(text)
  const limitMicroCents = Number(match?.[1])
  if (match === null || !PERIODS.includes(match[2]!) || !Number.isSafeInteger(limitMicroCents)) {
    return Effect.fail(new CliError({
      code: "USAGE",
      message: `--budget must be LIMIT/PERIOD, a whole number of micro-cents per ${PERIODS.join(", ")} (5000000/month is $5 a month), or none; not "${text}"`
    }))
  }
  return Effect.succeed({ limitMicroCents, period: match[2]! })
}

/** A budget as a line: "$5.00 per month (5000000 micro-cents)", or "none". */
export const budgetText = (budget: { readonly limitMicroCents: number; readonly period: string } | null | undefined) =>
  budget == null
    ? "none"
    : `${dollars(budget.limitMicroCents)} ${budget.period === "total" ? "in total" : `per ${budget.period}`} (${budget.limitMicroCents} micro-cents)`
