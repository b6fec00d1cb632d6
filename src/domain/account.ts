import { Schema } from "effect"
import { Budget } from "./budget.js"
import { AccountId, ApiKeyId } from "./ids.js"
import { INT32_MAX } from "./limits.js"

export const Discount = Schema.Struct({
  type: Schema.String.pipe(Schema.minLength(1)),
  percentage: Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(100)),
  /** Model slugs the discount applies to; absent means every model. */
  models: Schema.optional(Schema.Array(Schema.String))
})
export type Discount = typeof Discount.Type

export const Account = Schema.Struct({
  id: AccountId,
  name: Schema.String,
  balanceMicroCents: Schema.Int,
  maxConcurrentJobs: Schema.Int,
  segments: Schema.Array(Schema.String),
  allowedModels: Schema.Array(Schema.String),
  discounts: Schema.Array(Discount),
  webhookSecret: Schema.String,
  /** The secret before the last rotation, still signing until `previousWebhookSecretExpiresAt`. */
  previousWebhookSecret: Schema.NullOr(Schema.String),
  previousWebhookSecretExpiresAt: Schema.NullOr(Schema.Int),
  /** What the account's keys together may spend per period; absent or null: no cap. */
  budget: Schema.optional(Schema.NullOr(Budget)),
  createdAt: Schema.Int
})
export type Account = typeof Account.Type

export const Scope = Schema.Literal("submit_job", "check_status", "list_models")
export type Scope = typeof Scope.Type

export const ApiKey = Schema.Struct({
  id: ApiKeyId,
  accountId: AccountId,
  name: Schema.String,
  scopes: Schema.Array(Scope),
  allowedIPs: Schema.Array(Schema.String),
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  hash: Schema.String,
  /** Prefix plus the first characters of the secret, to tell keys apart in lists. */
  hint: Schema.String,
  active: Schema.Boolean,
  expiresAt: Schema.NullOr(Schema.Int),
  /** What this key may spend per period, within its account's budget; absent or null: no cap of its own. */
  budget: Schema.optional(Schema.NullOr(Budget)),
  createdAt: Schema.Int
})
export type ApiKey = typeof ApiKey.Type

export const LedgerKind = Schema.Literal("credit", "charge", "refund")
export type LedgerKind = typeof LedgerKind.Type

/** An append-only ledger line: credits are positive, charges negative, refunds positive. */
export const LedgerEntry = Schema.Struct({
  id: Schema.String,
  accountId: AccountId,
  jobId: Schema.NullOr(Schema.String),
  kind: LedgerKind,
  amountMicroCents: Schema.Int,
  createdAt: Schema.Int
})
export type LedgerEntry = typeof LedgerEntry.Type

/** The secrets that sign a webhook now: the current one, and the previous one during its overlap. */
export const signingSecrets = (account: Account, now: number): ReadonlyArray<string> =>
  account.previousWebhookSecret !== null && account.previousWebhookSecretExpiresAt !== null &&
    now < account.previousWebhookSecretExpiresAt
    ? [account.webhookSecret, account.previousWebhookSecret]
    : [account.webhookSecret]

/** The admin API's bodies: here rather than in the Admin service, so the HttpApi definition loads without the server. */
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

const AccountName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
/** Stored in a 32-bit column. */
const MaxConcurrentJobs = Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(INT32_MAX))

export const NewAccount = Schema.Struct({
  name: AccountName,
  creditsMicroCents: Schema.optionalWith(NonNegativeInt, { default: () => 0 }),
  maxConcurrentJobs: Schema.optionalWith(MaxConcurrentJobs, { default: () => 5 }),
  segments: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  allowedModels: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  discounts: Schema.optionalWith(Schema.Array(Discount), { default: () => [] }),
  budget: Schema.optional(Schema.NullOr(Budget))
})
export type NewAccount = typeof NewAccount.Type

/**
 * A change of an account's settings, checked as creation checks them; credits go through the
 * ledger instead. Unknown fields are refused, so a misspelt one is not silently ignored.
 */
export const AccountUpdate = Schema.Struct({
  name: Schema.optionalWith(AccountName, { exact: true }),
  maxConcurrentJobs: Schema.optionalWith(MaxConcurrentJobs, { exact: true }),
  segments: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  allowedModels: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  discounts: Schema.optionalWith(Schema.Array(Discount), { exact: true }),
  /** null removes the budget. */
  budget: Schema.optionalWith(Schema.NullOr(Budget), { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type AccountUpdate = typeof AccountUpdate.Type

export const NewApiKey = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  scopes: Schema.optionalWith(Schema.Array(Scope), { default: () => [] }),
  allowedIPs: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  expiresAt: Schema.optionalWith(Schema.NullOr(Schema.DateTimeUtc), { default: () => null }),
  budget: Schema.optional(Schema.NullOr(Budget))
})
export type NewApiKey = typeof NewApiKey.Type

/** A change of a key's settings: its budget (null removes it). */
export const ApiKeyUpdate = Schema.Struct({
  budget: Schema.NullOr(Budget)
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type ApiKeyUpdate = typeof ApiKeyUpdate.Type
