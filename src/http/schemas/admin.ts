import { Schema } from "effect"
import { Discount, LedgerEntry, Scope } from "../../domain/account.js"

export const AccountView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  balanceMicroCents: Schema.Number,
  maxConcurrentJobs: Schema.Number,
  segments: Schema.Array(Schema.String),
  allowedModels: Schema.Array(Schema.String),
  discounts: Schema.Array(Discount),
  webhookSecret: Schema.String,
  previousWebhookSecret: Schema.NullOr(Schema.String),
  previousWebhookSecretExpiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})

export const RotateSecretBody = Schema.Struct({
  /** How long the old secret keeps signing beside the new one; a day unless said. */
  overlapSeconds: Schema.optionalWith(Schema.Number, { default: () => 86_400 })
})

export const ApiKeyView = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(Scope),
  allowedIPs: Schema.Array(Schema.String),
  hint: Schema.String,
  active: Schema.Boolean,
  expiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})

export const CreatedApiKeyView = Schema.extend(ApiKeyView, Schema.Struct({ key: Schema.String }))

export const CreditsBody = Schema.Struct({ amountMicroCents: Schema.Number })

export const LedgerView = Schema.Struct({ entries: Schema.Array(LedgerEntry) })

export const IdPath = Schema.Struct({ id: Schema.String })

export const CatalogImportResult = Schema.Struct({ revision: Schema.Number, models: Schema.Number })
