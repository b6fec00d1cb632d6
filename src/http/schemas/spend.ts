import { Schema } from "effect"
import { BudgetPeriod } from "../../domain/budget.js"
import { MAX_SPEND_RANGE_DAYS } from "../../domain/spend.js"

const rangeParams = {
  from: Schema.optionalKey(Schema.String.annotate({ description: "ISO 8601; rollup hours from here (default: 30 days before `to`)" })),
  to: Schema.optionalKey(Schema.String.annotate({
    description: `ISO 8601, exclusive (default: the end of the current hour); at most ${MAX_SPEND_RANGE_DAYS} days after \`from\``
  }))
}

/** GET /admin/spend */
export const AdminSpendParams = Schema.Struct({
  ...rangeParams,
  groupBy: Schema.optionalKey(Schema.String.annotate({
    description: "One or two of account, key, model, day, hour, comma-separated (default day); day and hour are UTC"
  })),
  accountId: Schema.optionalKey(Schema.String)
})

/** GET /v1/account/spend */
export const AccountSpendParams = Schema.Struct({
  ...rangeParams,
  groupBy: Schema.optionalKey(Schema.String.annotate({
    description: "One or two of key, model, day, hour, comma-separated (default day); day and hour are UTC"
  }))
})

const SpendGroupView = Schema.Struct({
  account: Schema.optionalKey(Schema.String),
  key: Schema.optionalKey(Schema.NullOr(Schema.String).annotate({ description: "null: jobs submitted before keys were recorded" })),
  model: Schema.optionalKey(Schema.String),
  day: Schema.optionalKey(Schema.String.annotate({ description: "UTC date, YYYY-MM-DD" })),
  hour: Schema.optionalKey(Schema.String.annotate({ description: "Start of the UTC hour, ISO 8601" })),
  chargedMicroCents: Schema.Int,
  refundedMicroCents: Schema.Int,
  spentMicroCents: Schema.Int.annotate({ description: "charged less refunded" }),
  jobs: Schema.Int.annotate({ description: "Jobs submitted" }),
  failed: Schema.Int,
  cancelled: Schema.Int
})

/** Spend rollups summed by the groups asked for; a job's charge and refund count in the hour of its submit. */
export const SpendView = Schema.Struct({
  from: Schema.String,
  to: Schema.String,
  groupBy: Schema.Array(Schema.String),
  groups: Schema.Array(SpendGroupView)
})

/** A budget with what its current period has spent. */
export const BudgetStatusView = Schema.Struct({
  limitMicroCents: Schema.Int,
  period: BudgetPeriod,
  spentMicroCents: Schema.Int,
  resetsAt: Schema.NullOr(Schema.String).annotate({ description: "When the period ends (UTC); null for total" })
})
