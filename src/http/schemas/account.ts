import { Schema } from "effect"
import { Scope } from "../../domain/account.js"
import { BudgetStatusView } from "./spend.js"

/** GET /v1/account: fields at the top level, as the spec's job endpoints answer. */
export const AccountOverviewView = Schema.Struct({
  account: Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    balanceMicroCents: Schema.Int,
    maxConcurrentJobs: Schema.Int,
    jobsInFlight: Schema.Int.annotate({ description: "Pending and processing jobs: what counts against maxConcurrentJobs" }),
    budget: Schema.NullOr(BudgetStatusView)
  }),
  key: Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    scopes: Schema.Array(Scope).annotate({ description: "Empty means every scope" }),
    allowedIPs: Schema.Array(Schema.String),
    expiresAt: Schema.NullOr(Schema.String),
    budget: Schema.NullOr(BudgetStatusView)
  })
})
