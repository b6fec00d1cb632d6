import { Effect, Schema } from "effect"
import { Budget } from "./budget.js"
import { AccountId, ApiKeyId } from "./ids.js"
import { FairShareWeight } from "./fairShareWeight.js"
import { INT32_MAX } from "./limits.js"

export const Discount = Schema.Struct({
  type: Schema.String.check(Schema.isMinLength(1)),
  percentage: Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(100)),
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
  standardWebhooks: Schema.Boolean,
  /** What the account's keys together may spend per period; absent or null: no cap. */
  budget: Schema.optional(Schema.NullOr(Budget)),
  createdAt: Schema.Int,
  /** The account's share of capacity other accounts' jobs also wait for (src/domain/fairShare.ts); absent: 1. */
  fairShareWeight: Schema.optional(FairShareWeight)
})
export type Account = typeof Account.Type

export const Scope = Schema.Literals(["submit_job", "check_status", "list_models"])
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

export const LedgerKind = Schema.Literals(["credit", "charge", "refund"])
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
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

const AccountName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
/** Stored in a 32-bit column. */
const MaxConcurrentJobs = Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(INT32_MAX))
const StandardWebhooks = Schema.Boolean.annotate({
  description: "When true, every webhook of the account also carries the Standard Webhooks headers webhook-id, " +
    "webhook-timestamp and webhook-signature, signed with the same secret as X-Service-Signature (docs/webhooks.md)"
})

export const NewAccount = Schema.Struct({
  name: AccountName,
  creditsMicroCents: NonNegativeInt.pipe(Schema.withDecodingDefaultType(Effect.succeed(0))),
  maxConcurrentJobs: MaxConcurrentJobs.pipe(Schema.withDecodingDefaultType(Effect.succeed(5))),
  segments: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  allowedModels: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  discounts: Schema.Array(Discount).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  budget: Schema.optional(Schema.NullOr(Budget)),
  /** Absent: 1 (DEFAULT_FAIR_WEIGHT). */
  fairShareWeight: Schema.optional(FairShareWeight),
  /** Absent: false. */
  standardWebhooks: Schema.optionalKey(StandardWebhooks)
})
export type NewAccount = typeof NewAccount.Type

/**
 * A change of an account's settings, checked as creation checks them; credits go through the
 * ledger instead. Unknown fields are refused by the decode that reads it (on Effect 4 a schema
 * carries no parse options: the HTTP body's strictBody decodes with onExcessProperty "error"),
 * so a misspelt one is not silently ignored.
 */
export const AccountUpdate = Schema.Struct({
  name: Schema.optionalKey(AccountName),
  maxConcurrentJobs: Schema.optionalKey(MaxConcurrentJobs),
  segments: Schema.optionalKey(Schema.Array(Schema.String)),
  allowedModels: Schema.optionalKey(Schema.Array(Schema.String)),
  discounts: Schema.optionalKey(Schema.Array(Discount)),
  /** null removes the budget. */
  budget: Schema.optionalKey(Schema.NullOr(Budget)),
  fairShareWeight: Schema.optionalKey(FairShareWeight),
  standardWebhooks: Schema.optionalKey(StandardWebhooks)
})
export type AccountUpdate = typeof AccountUpdate.Type

export const NewApiKey = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  scopes: Schema.Array(Scope).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  allowedIPs: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultType(Effect.sync(() => []))),
  expiresAt: Schema.NullOr(Schema.DateTimeUtcFromString).pipe(Schema.withDecodingDefaultType(Effect.succeed(null))),
  budget: Schema.optional(Schema.NullOr(Budget))
})
export type NewApiKey = typeof NewApiKey.Type

/** A change of a key's settings: its budget (null removes it). Unknown fields are refused by its decode, as AccountUpdate's. */
export const ApiKeyUpdate = Schema.Struct({
  budget: Schema.NullOr(Budget)
})
export type ApiKeyUpdate = typeof ApiKeyUpdate.Type
