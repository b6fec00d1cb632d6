import { Cause, Effect, Option, Schema, SchemaGetter, type SchemaIssue, SchemaTransformation } from "effect"
import { SqlError } from "effect/sql"
import { Account, ApiKey, LedgerEntry } from "../../src/domain/account.js"
import { type Budget, BudgetPeriod } from "../../src/domain/budget.js"
import { CorruptRow, StoreError } from "../../src/domain/errors.js"
import { ApiKeyId } from "../../src/domain/ids.js"
import { DEFAULT_FAIR_WEIGHT } from "../../src/domain/fairShare.js"
import { Job, type JobStatus, OutputItem } from "../../src/domain/job.js"
import { StoredJobError } from "../../src/domain/storedJobError.js"
import { ProviderHandle, type ProviderPhase, ProviderRouteRef } from "../../src/domain/providerHandle.js"
import { ProviderLogMark } from "../../src/domain/providerLogs.js"
import { WebhookDelivery } from "../../src/domain/webhook.js"

/**
 * SQLite answers an INTEGER as a number, PostgreSQL a BIGINT as a bigint (and as a string in
 * JSON or text results): each decodes to a safe integer, never a rounded one (Schema.Int is
 * safe integers only). Encoding gives the number.
 */
export const DbInt = Schema.Union([
  Schema.Int,
  Schema.NumberFromString.check(Schema.isInt()),
  Schema.BigInt.pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: Number, encode: BigInt })))
])
const DbIntOrNull = Schema.NullOr(DbInt)
const Json = <S extends Schema.Constraint>(schema: S) => Schema.fromJsonString(schema)

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
  standard_webhooks: DbInt,
  ...BudgetColumns,
  created_at: DbInt,
  fair_weight: DbInt
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
    standardWebhooks: row.standard_webhooks === 1,
    ...budgetOf(row),
    createdAt: row.created_at,
    // Absent when it is the default, as on an account made without one.
    ...(row.fair_weight === DEFAULT_FAIR_WEIGHT ? {} : { fairShareWeight: row.fair_weight })
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

/** A JSON text column; NULL when the field is null. */
const JsonOrNull = <S extends Schema.Constraint>(schema: S) => Schema.NullOr(Json(schema))

/** The JSON text `null`, which earlier releases wrote for a job without an error: read as NULL, never written. */
const JsonNullText = Schema.Literal("null").pipe(
  Schema.decodeTo(Schema.Null, SchemaTransformation.transform({ decode: () => null, encode: () => "null" as const }))
)

/**
 * The key that submitted a job. NULL in the column, or no column at all (a previous release's
 * reads), is a job without `apiKeyId`, as jobs of releases that did not record it are.
 */
const ApiKeyIdColumn = Schema.optionalKey(Schema.NullOr(Schema.String)).pipe(
  Schema.decodeTo(Schema.optional(Schema.NullOr(ApiKeyId)), {
    decode: SchemaGetter.transformOptional(Option.filter((id: string | null) => id !== null)),
    encode: SchemaGetter.transformOptional((id) => Option.some(Option.getOrUndefined(id) ?? null))
  })
)

/** A nullable column read as an optional field: NULL (or no column, a previous release's reads) is absent. */
const NullAsAbsent = <S extends Schema.Top>(column: S, field: Schema.Codec<S["Type"]>) =>
  Schema.optionalKey(Schema.NullOr(column)).pipe(
    Schema.decodeTo(Schema.optional(field), {
      decode: SchemaGetter.transformOptional(Option.filter((value: S["Type"] | null) => value !== null)),
      encode: SchemaGetter.transformOptional((value) => Option.some(Option.getOrUndefined(value) ?? null))
    })
  )

/**
 * A job's fields and their codecs, each field of Job exactly once (`satisfies`: the compiler
 * refuses a field of Job missing here, or one here that is not Job's).
 */
const jobFields = {
  id: Job.fields.id,
  accountId: Job.fields.accountId,
  apiKeyId: ApiKeyIdColumn,
  requestId: Job.fields.requestId,
  model: Job.fields.model,
  version: Job.fields.version,
  input: Json(Job.fields.input),
  webhookUrl: Job.fields.webhookUrl,
  status: Job.fields.status,
  costMicroCents: DbInt,
  error: Schema.Union([Schema.Null, Json(StoredJobError), JsonNullText]),
  outputs: JsonOrNull(Schema.Array(OutputItem)),
  createdAt: DbInt,
  estimatedCompletionAt: DbInt,
  startedAt: DbIntOrNull,
  completedAt: DbIntOrNull,
  attempts: DbInt,
  leaseOwner: Job.fields.leaseOwner,
  leaseExpiresAt: DbIntOrNull,
  providerPhase: Job.fields.providerPhase,
  providerHandle: JsonOrNull(ProviderHandle),
  providerStarts: DbInt,
  providerRoute: JsonOrNull(ProviderRouteRef),
  fairKey: DbInt,
  providerProgress: NullAsAbsent(DbInt, Schema.Int),
  providerLog: NullAsAbsent(Json(ProviderLogMark), ProviderLogMark)
} satisfies { readonly [K in keyof Job]-?: Schema.Top }

/** A job's fields as a struct whose encoded keys are still the field names (see jobColumnNames). */
export const JobFields = Schema.Struct(jobFields)

/** The column of each field whose column is not named as it is: `Schema.encodeKeys(jobColumnNames)`. */
export const jobColumnNames = {
  accountId: "account_id",
  apiKeyId: "api_key_id",
  requestId: "request_id",
  webhookUrl: "webhook_url",
  costMicroCents: "cost_micro_cents",
  createdAt: "created_at",
  estimatedCompletionAt: "estimated_completion_at",
  startedAt: "started_at",
  completedAt: "completed_at",
  leaseOwner: "lease_owner",
  leaseExpiresAt: "lease_expires_at",
  providerPhase: "provider_phase",
  providerHandle: "provider_handle",
  providerStarts: "provider_starts",
  providerRoute: "provider_route",
  fairKey: "fair_key",
  providerProgress: "provider_progress",
  providerLog: "provider_log"
} as const

/**
 * A job as its row in `jobs`, the one definition of that row: decoding reads a row as either
 * driver answers it, encoding gives the row to insert and each update's SET list. A new job
 * field is a line in jobFields (its codec), in jobColumnNames when its column is named
 * otherwise, and a migration.
 */
export const JobFromRow = JobFields.pipe(Schema.encodeKeys(jobColumnNames)) satisfies Schema.Schema<Job>

/** A job's row as the driver takes and answers it. */
export type JobColumns = typeof JobFromRow.Encoded

/** A BIGINT column as the drivers answer it (DbInt): a safe integer, as a number, a bigint or its plain decimal text. */
const plainInt = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isSafeInteger(value) ? value : undefined
  if (typeof value === "bigint") {
    const n = Number(value)
    return Number.isSafeInteger(n) ? n : undefined
  }
  if (typeof value !== "string" || !/^-?(?:0|[1-9][0-9]{0,15})$/.test(value)) return undefined
  const n = Number(value)
  return Number.isSafeInteger(n) ? n : undefined
}

/** JSON text's value; undefined for text that is not JSON, which the Schema then refuses. */
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

/** A JSON object of plain values (a job's input); `__proto__` is left to the Schema. */
const plainRecord = (text: unknown): Record<string, unknown> | undefined => {
  if (typeof text !== "string" || text.includes("__proto__")) return undefined
  const value = parseJson(text)
  return isPlainObject(value) ? value : undefined
}

const OUTPUT_TYPES: ReadonlySet<unknown> = new Set(OutputItem.fields.type.literals)
const JOB_STATUSES: ReadonlySet<unknown> = new Set(Job.fields.status.literals)
export const isJobStatus = (value: unknown): value is JobStatus => JOB_STATUSES.has(value)
const PROVIDER_PHASES: ReadonlySet<unknown> = new Set(["starting", "started"] satisfies ReadonlyArray<ProviderPhase>)
const OPTIONAL_OUTPUT_TEXTS = ["thumbnail", "posterImage", "contentType"] as const

/**
 * Outputs without metadata as the Schema reads and writes them: their known keys only, in the
 * Schema's order (a job's JSON in the API keeps it); undefined for anything else.
 */
export const plainOutputs = (items: unknown): ReadonlyArray<OutputItem> | undefined => {
  if (!Array.isArray(items)) return undefined
  const outputs: Array<OutputItem> = []
  for (const item of items) {
    if (!isPlainObject(item) || typeof item.url !== "string" || !OUTPUT_TYPES.has(item.type) || item.metadata !== undefined) return undefined
    const output: { -readonly [K in keyof OutputItem]: OutputItem[K] } = { url: item.url, type: item.type as OutputItem["type"] }
    for (const key of OPTIONAL_OUTPUT_TEXTS) {
      const value = item[key]
      if (value === undefined) continue
      if (typeof value !== "string") return undefined
      output[key] = value
    }
    outputs.push(output)
  }
  return outputs
}

/** A route as the Schema reads and writes it, its keys in the Schema's order; undefined for anything else. */
export const plainRoute = (route: unknown): ProviderRouteRef | undefined => {
  if (!isPlainObject(route)) return undefined
  const { credentialId, index, providerId } = route
  if (typeof index !== "number" || !Number.isSafeInteger(index) || index < 0) return undefined
  if (typeof providerId !== "string" || providerId.length === 0) return undefined
  if (credentialId === undefined) return { index, providerId }
  return typeof credentialId === "string" ? { index, providerId, credentialId } : undefined
}

const stringOrNull = (value: unknown): value is string | null => value === null || typeof value === "string"

/**
 * The job of a row as a claim or an ending answers it, read without the Schema: no error, no
 * provider handle or log, outputs without metadata, every value plain. JobFromRow's decode of a
 * row costs ~12 µs, and a drained job's row is read twice (its claim's and its ending's
 * RETURNING): docs/benchmarks.md, "PostgreSQL drain: the worker's CPU per job". Undefined for
 * any other row, which JobFromRow then reads (or refuses): a test holds the two equal.
 */
export const plainJobOfRow = (row: unknown): Job | undefined => {
  if (!isPlainObject(row)) return undefined
  const {
    account_id, api_key_id, error, id, lease_owner, model, outputs, provider_handle, provider_log, provider_phase,
    provider_progress, provider_route, request_id, status, version, webhook_url
  } = row
  if (
    typeof id !== "string" || typeof account_id !== "string" || (api_key_id === undefined ? "api_key_id" in row : !stringOrNull(api_key_id)) ||
    typeof request_id !== "string" || typeof model !== "string" || typeof version !== "string" ||
    !stringOrNull(webhook_url) || !isJobStatus(status) || !(error === null || error === "null") ||
    !stringOrNull(outputs) || !stringOrNull(lease_owner) || !(provider_phase === null || PROVIDER_PHASES.has(provider_phase)) ||
    provider_handle !== null || !stringOrNull(provider_route) || !(provider_log === null || (provider_log === undefined && !("provider_log" in row))) ||
    (provider_progress === undefined && "provider_progress" in row)
  ) return undefined
  const input = plainRecord(row.input)
  const costMicroCents = plainInt(row.cost_micro_cents)
  const createdAt = plainInt(row.created_at)
  const estimatedCompletionAt = plainInt(row.estimated_completion_at)
  const startedAt = row.started_at === null ? null : plainInt(row.started_at)
  const completedAt = row.completed_at === null ? null : plainInt(row.completed_at)
  const attempts = plainInt(row.attempts)
  const leaseExpiresAt = row.lease_expires_at === null ? null : plainInt(row.lease_expires_at)
  const providerStarts = plainInt(row.provider_starts)
  const fairKey = plainInt(row.fair_key)
  const providerProgress = provider_progress === null || provider_progress === undefined ? undefined : plainInt(provider_progress)
  const decodedOutputs = outputs === null ? null : plainOutputs(parseJson(outputs))
  const providerRoute = provider_route === null ? null : plainRoute(parseJson(provider_route))
  if (
    input === undefined || costMicroCents === undefined || createdAt === undefined || estimatedCompletionAt === undefined ||
    startedAt === undefined || completedAt === undefined || attempts === undefined || leaseExpiresAt === undefined ||
    providerStarts === undefined || fairKey === undefined || decodedOutputs === undefined || providerRoute === undefined ||
    (providerProgress === undefined && !(provider_progress === null || provider_progress === undefined))
  ) return undefined
  // The Schema's field order: a job's JSON in the API keeps it.
  return {
    id: id as Job["id"],
    accountId: account_id as Job["accountId"],
    ...(typeof api_key_id === "string" ? { apiKeyId: api_key_id as ApiKeyId } : {}),
    requestId: request_id as Job["requestId"],
    model,
    version,
    input,
    webhookUrl: webhook_url,
    status,
    costMicroCents,
    error: null,
    outputs: decodedOutputs,
    createdAt,
    estimatedCompletionAt,
    startedAt,
    completedAt,
    attempts,
    leaseOwner: lease_owner,
    leaseExpiresAt,
    providerPhase: provider_phase as ProviderPhase | null,
    providerHandle: null,
    providerStarts,
    providerRoute,
    fairKey,
    ...(providerProgress === undefined ? {} : { providerProgress })
  }
}

/**
 * Decoding what the store answered: a rejected row is kept in the issue (`reportInput`), so
 * that a CorruptRow can name its id. Only the id leaves: see corruptRow.
 */
export const decodeRows = <S extends Schema.Constraint>(schema: S) => Schema.decodeUnknownEffect(schema, { reportInput: true })

/**
 * The id of the first row on a decode failure's path: the shallowest value with a string `id`.
 * Issues hold the rejected value only when the decode reported its input (decodeRows).
 */
const failedRowId = (issue: SchemaIssue.Issue): string | undefined => {
  const input: unknown = issue.input
  if (typeof input === "object" && input !== null && "id" in input && typeof input.id === "string") return input.id
  const next = "issues" in issue ? issue.issues[0] : "issue" in issue ? issue.issue : undefined
  return next === undefined ? undefined : failedRowId(next)
}

/** Each failing field's path and the kind of its issue: never a value or a message, which can quote one. */
const issueKinds = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): ReadonlyArray<string> => {
  switch (issue._tag) {
    case "Pointer":
      return issueKinds(issue.issue, [...path, ...issue.path])
    case "Filter":
    case "Encoding":
      return issueKinds(issue.issue, path)
    case "Composite":
      return issue.issues.flatMap((inner) => issueKinds(inner, path))
    case "AnyOf":
      if (issue.issues.length > 0) return issue.issues.flatMap((inner) => issueKinds(inner, path))
  }
  return [`${path.map(String).join(".")}: ${issue._tag}`]
}

/**
 * A read row that does not decode is a CorruptRow, named by the operation and the row's id: the
 * store answered, so retrying will not help (see CorruptRow). Its issue names the failing
 * fields, not the row's values, which may hold secrets.
 */
const corruptRow = (operation: string, error: Schema.SchemaError) =>
  new CorruptRow({
    operation,
    rowId: failedRowId(error.issue),
    issue: issueKinds(error.issue, []).join("; ")
  })

const storeError = (what: string, cause: unknown) =>
  new StoreError({ message: `${what} failed`, cause: Schema.isSchemaError(cause) ? corruptRow(what, cause) : cause })

/**
 * SQL and row-decoding failures leave the adapter as StoreError. So does a SqlError defect:
 * `withTransaction` dies when its COMMIT or ROLLBACK fails, as both do on a connection the
 * server terminated mid-transaction, and that is a store outage (503), not a bug (500).
 */
export const storeErrors = (what: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E | SqlError.SqlError | Schema.SchemaError, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError | Schema.SchemaError> | StoreError, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError.SqlError | Schema.SchemaError => SqlError.isSqlError(e) || Schema.isSchemaError(e),
    (cause) => Effect.fail(storeError(what, cause))
  ).pipe(
    Effect.catchCause((cause) => {
      const died = cause.reasons.find(Cause.isDieReason)
      return died !== undefined && SqlError.isSqlError(died.defect) ? Effect.fail(storeError(what, died.defect)) : Effect.failCause(cause)
    })
  ) as Effect.Effect<A, Exclude<E, SqlError.SqlError | Schema.SchemaError> | StoreError, R>

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
