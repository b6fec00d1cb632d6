import { SqlError } from "effect/sql"
import { Effect, Option, ParseResult, Schema } from "effect"
import { Account, ApiKey, LedgerEntry } from "../../src/domain/account.js"
import { type Budget, BudgetPeriod } from "../../src/domain/budget.js"
import { CorruptRow, StoreError } from "../../src/domain/errors.js"
import { ApiKeyId } from "../../src/domain/ids.js"
import { Job, JobError, OutputItem } from "../../src/domain/job.js"
import { ProviderHandle, ProviderRouteRef } from "../../src/domain/providerHandle.js"
import { WebhookDelivery } from "../../src/domain/webhook.js"

/** PostgreSQL answers BIGINT as a string, SQLite as a number: both decode to a safe integer. */
export const DbInt = Schema.Union(Schema.Int, Schema.NumberFromString.pipe(Schema.int()))
const DbIntOrNull = Schema.NullOr(DbInt)
const Json = <A, I>(schema: Schema.Schema<A, I>) => Schema.parseJson(schema)

const JsonStrings = Json(Schema.Array(Schema.String))

/** A budget's two columns, on accounts and on keys; both null when there is none. */
const BudgetColumns = {
  budget_limit_micro_cents: DbIntOrNull,
  budget_period: Schema.NullOr(BudgetPeriod)
}

/** The budget field as the stores keep it: absent when there is none, as on a record made without one. */
const budgetOf = (row: { readonly budget_limit_micro_cents: number | null; readonly budget_period: BudgetPeriod | null }): { readonly budget?: Budget } =>
  row.budget_limit_micro_cents === null || row.budget_period === null
    ? {}
    : { budget: { limitMicroCents: row.budget_limit_micro_cents, period: row.budget_period } }

/** A budget as its two columns. */
export const budgetColumns = (budget: Budget | null | undefined) => ({
  budget_limit_micro_cents: budget?.limitMicroCents ?? null,
  budget_period: budget?.period ?? null
})

export const AccountRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  balance_micro_cents: DbInt,
  max_concurrent_jobs: DbInt,
  segments: JsonStrings,
  allowed_models: JsonStrings,
  discounts: Json(Account.fields.discounts),
  webhook_secret: Schema.String,
  previous_webhook_secret: Schema.NullOr(Schema.String),
  previous_webhook_secret_expires_at: DbIntOrNull,
  ...BudgetColumns,
  created_at: DbInt
})

export const toAccount = (row: typeof AccountRow.Type): Account =>
  Account.make({
    id: row.id as Account["id"],
    name: row.name,
    balanceMicroCents: row.balance_micro_cents,
    maxConcurrentJobs: row.max_concurrent_jobs,
    segments: row.segments,
    allowedModels: row.allowed_models,
    discounts: row.discounts,
    webhookSecret: row.webhook_secret,
    previousWebhookSecret: row.previous_webhook_secret,
    previousWebhookSecretExpiresAt: row.previous_webhook_secret_expires_at,
    ...budgetOf(row),
    createdAt: row.created_at
  })

export const LedgerRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  job_id: Schema.NullOr(Schema.String),
  kind: LedgerEntry.fields.kind,
  amount_micro_cents: DbInt,
  created_at: DbInt
})

export const toLedgerEntry = (row: typeof LedgerRow.Type): LedgerEntry => ({
  id: row.id,
  accountId: row.account_id as LedgerEntry["accountId"],
  jobId: row.job_id,
  kind: row.kind,
  amountMicroCents: row.amount_micro_cents,
  createdAt: row.created_at
})

export const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  name: Schema.String,
  scopes: Json(ApiKey.fields.scopes),
  allowed_ips: JsonStrings,
  hash: Schema.String,
  hint: Schema.String,
  active: DbInt,
  expires_at: DbIntOrNull,
  ...BudgetColumns,
  created_at: DbInt
})

export const toApiKey = (row: typeof ApiKeyRow.Type): ApiKey => ({
  id: row.id as ApiKey["id"],
  accountId: row.account_id as ApiKey["accountId"],
  name: row.name,
  scopes: row.scopes,
  allowedIPs: row.allowed_ips,
  hash: row.hash,
  hint: row.hint,
  active: row.active === 1,
  expiresAt: row.expires_at,
  ...budgetOf(row),
  createdAt: row.created_at
})

/** A field kept in the column `name`. */
const column = <const Name extends string, S extends Schema.Schema.Any>(name: Name, codec: S) =>
  Schema.propertySignature(codec).pipe(Schema.fromKey(name))

/** A JSON text column; NULL when the field is null. */
const JsonOrNull = <A, I>(schema: Schema.Schema<A, I>) => Schema.NullOr(Json(schema))

/** The JSON text `null`, which earlier releases wrote for a job without an error: read as NULL, never written. */
const JsonNullText = Schema.transform(Schema.Literal("null"), Schema.Null, {
  strict: true,
  decode: () => null,
  encode: () => "null" as const
})

/**
 * The key that submitted a job. NULL in the column, or no column at all (a previous release's
 * reads), is a job without `apiKeyId`, as jobs of releases that did not record it are.
 */
const ApiKeyIdColumn = Schema.optionalToOptional(Schema.NullOr(Schema.String), Schema.UndefinedOr(Schema.NullOr(ApiKeyId)), {
  decode: Option.filter((id): id is string => id !== null),
  encode: (id) => Option.some(Option.getOrUndefined(id) ?? null)
}).pipe(Schema.fromKey("api_key_id"))

/**
 * A job as its row in `jobs`, the one definition of that row: decoding reads a row as either
 * driver answers it, encoding gives the row to insert and each update's SET list. A new job
 * field is a line here (its column and codec) and a migration; the compiler refuses this
 * schema while a field of Job is missing here or one here is not Job's.
 */
export const JobFromRow = Schema.Struct({
  id: Job.fields.id,
  accountId: column("account_id", Job.fields.accountId),
  apiKeyId: ApiKeyIdColumn,
  requestId: column("request_id", Job.fields.requestId),
  model: Job.fields.model,
  version: Job.fields.version,
  input: Json(Job.fields.input),
  webhookUrl: column("webhook_url", Job.fields.webhookUrl),
  status: Job.fields.status,
  costMicroCents: column("cost_micro_cents", DbInt),
  error: Schema.Union(Schema.Null, Json(JobError), JsonNullText),
  outputs: JsonOrNull(Schema.Array(OutputItem)),
  createdAt: column("created_at", DbInt),
  estimatedCompletionAt: column("estimated_completion_at", DbInt),
  startedAt: column("started_at", DbIntOrNull),
  completedAt: column("completed_at", DbIntOrNull),
  attempts: DbInt,
  leaseOwner: column("lease_owner", Job.fields.leaseOwner),
  leaseExpiresAt: column("lease_expires_at", DbIntOrNull),
  providerPhase: column("provider_phase", Job.fields.providerPhase),
  providerHandle: column("provider_handle", JsonOrNull(ProviderHandle)),
  providerStarts: column("provider_starts", DbInt),
  providerRoute: column("provider_route", JsonOrNull(ProviderRouteRef))
}) satisfies Schema.Schema<Job, any> // any: the columns are what the fields above make them

/** A job's row as the driver takes and answers it. */
export type JobColumns = typeof JobFromRow.Encoded

/**
 * SQL and row-decoding failures leave the adapter as StoreError. So does a SqlError defect:
 * `withTransaction` dies when its COMMIT or ROLLBACK fails, as both do on a connection the
 * server terminated mid-transaction, and that is a store outage (503), not a bug (500).
 */
/** The id of the first row on a decode failure's path: the shallowest value with a string `id`. */
const failedRowId = (issue: ParseResult.ParseIssue): string | undefined => {
  const actual: unknown = "actual" in issue ? issue.actual : undefined
  if (typeof actual === "object" && actual !== null && "id" in actual && typeof actual.id === "string") return actual.id
  const next = "issues" in issue ? (Array.isArray(issue.issues) ? issue.issues[0] : issue.issues) : "issue" in issue ? issue.issue : undefined
  return next === undefined ? undefined : failedRowId(next as ParseResult.ParseIssue)
}

/**
 * A read row that does not decode is a CorruptRow, named by the operation and the row's id: the
 * store answered, so retrying will not help (see CorruptRow). Its issue names the failing
 * fields, not the row's values, which may hold secrets.
 */
const corruptRow = (operation: string, error: ParseResult.ParseError) =>
  new CorruptRow({
    operation,
    rowId: failedRowId(error.issue),
    issue: ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => `${i.path.join(".")}: ${i._tag}`).join("; ")
  })

export const storeErrors = (what: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E | SqlError.SqlError | ParseResult.ParseError, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError | ParseResult.ParseError> | StoreError, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError.SqlError | ParseResult.ParseError => e instanceof SqlError.SqlError || ParseResult.isParseError(e),
    (cause) =>
      Effect.fail(new StoreError({ message: `${what} failed`, cause: ParseResult.isParseError(cause) ? corruptRow(what, cause) : cause }))
  ).pipe(
    Effect.catchSomeDefect((defect) =>
      defect instanceof SqlError.SqlError
        ? Option.some(Effect.fail(new StoreError({ message: `${what} failed`, cause: defect })))
        : Option.none()
    )
  ) as Effect.Effect<A, Exclude<E, SqlError.SqlError | ParseResult.ParseError> | StoreError, R>

export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  job_id: Schema.String,
  account_id: Schema.String,
  url: Schema.String,
  payload: Schema.String,
  status: WebhookDelivery.fields.status,
  attempts: Json(WebhookDelivery.fields.attempts),
  next_attempt_at: DbIntOrNull,
  lease_owner: Schema.NullOr(Schema.String),
  lease_expires_at: DbIntOrNull,
  created_at: DbInt
})

export const toDelivery = (row: typeof DeliveryRow.Type): WebhookDelivery => ({
  id: row.id,
  jobId: row.job_id,
  accountId: row.account_id,
  url: row.url,
  payload: row.payload,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  leaseOwner: row.lease_owner,
  leaseExpiresAt: row.lease_expires_at,
  createdAt: row.created_at
})
