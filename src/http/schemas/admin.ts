import { Effect, Schema, Struct } from "effect"
import { AccountUpdate, ApiKeyUpdate, Discount, LedgerEntry, NewAccount, NewApiKey, Scope } from "../../domain/account.js"
import { Budget } from "../../domain/budget.js"
import { FairShareWeight } from "../../domain/fairShareWeight.js"
import { AuditAction, RecordedAuditAction } from "../../domain/audit.js"
import { CatalogDocument } from "../../domain/catalog.js"
import { FailureType } from "../../domain/failureTaxonomy.js"
import { JobError, JobStatus } from "../../domain/job.js"
import { MAX_PAGE_SIZE } from "../../domain/limits.js"
import { DeliveryStatus } from "../../domain/webhook.js"
import { OutputItemView } from "./jobs.js"
import { ProviderProgress } from "./jobLogs.js"
import { documentedAs, PageLimit, StatusFilter } from "./paging.js"
import { DeliveryView } from "./webhooks.js"

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
  standardWebhooks: Schema.Boolean.annotate({
    description: "Whether webhooks also carry the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature)"
  }),
  budget: Schema.NullOr(Budget),
  createdAt: Schema.String,
  fairShareWeight: FairShareWeight
})

export const RotateSecretBody = Schema.Struct({
  /** How long the old secret keeps signing beside the new one; a day unless said. */
  overlapSeconds: Schema.Number.pipe(Schema.withDecodingDefaultTypeKey(Effect.succeed(86_400)))
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
  budget: Schema.NullOr(Budget),
  createdAt: Schema.String
})

export const CreatedApiKeyView = ApiKeyView.mapFields(Struct.assign({ key: Schema.String }))

export const CreditsBody = Schema.Struct({ amountMicroCents: Schema.Number })

/** The admin bodies whose shapes the domain defines, as the API takes them: without unknown fields. */
export const NewAccountBody = NewAccount
export const AccountUpdateBody = AccountUpdate
export const NewApiKeyBody = NewApiKey
export const ApiKeyUpdateBody = ApiKeyUpdate
export const CatalogBody = CatalogDocument

/** A page of the ledger, oldest first; `createdAt` in epoch milliseconds. */
export const LedgerView = Schema.Struct({
  entries: Schema.Array(LedgerEntry),
  nextCursor: Schema.NullOr(Schema.String),
  hasMore: Schema.Boolean
})

export const IdPath = Schema.Struct({ id: Schema.String })

export const CatalogImportResult = Schema.Struct({ revision: Schema.Number, models: Schema.Number })

export const CatalogReplaceHeaders = Schema.Struct({
  "if-match": Schema.optionalKey(Schema.String.annotate({
    description: "Replace only if the stored catalog is still this revision, as an entity tag (\"7\"): the ETag of " +
      "GET /admin/catalog, or the revision of POST /admin/catalog/diff in quotes. Otherwise 412 PRECONDITION_FAILED " +
      "and nothing changes."
  }))
})

const PartDiff = Schema.Struct({
  added: Schema.Array(Schema.String),
  removed: Schema.Array(Schema.String),
  changed: Schema.Array(Schema.String)
})

/** What a catalog document would change: ids of each part (models by slug) added, removed and changed. */
export const CatalogPreviewView = Schema.Struct({
  revision: Schema.Number.annotate({ description: "The stored catalog's revision the document was compared with" }),
  unchanged: Schema.Boolean.annotate({ description: "True when replacing would change nothing" }),
  diff: Schema.Struct({ categories: PartDiff, capabilities: PartDiff, providers: PartDiff, models: PartDiff })
})

const pageOf = <K extends string, S extends Schema.Top>(key: K, item: S) =>
  Schema.Struct({ [key]: Schema.Array(item), nextCursor: Schema.NullOr(Schema.String), hasMore: Schema.Boolean } as {
    [P in K]: Schema.$Array<S>
  } & { nextCursor: Schema.NullOr<Schema.String>; hasMore: Schema.Boolean })

const paging = {
  limit: Schema.optionalKey(PageLimit),
  cursor: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page" }))
}

/** An account in a list: its settings and balance, without its webhook secrets. */
export const AccountListItem = AccountView.mapFields(Struct.omit(["webhookSecret", "previousWebhookSecret", "previousWebhookSecretExpiresAt"]))

export const AccountListParams = Schema.Struct({
  ...paging,
  search: Schema.optionalKey(Schema.String.annotate({ description: "A fragment of the name or the id (ASCII letters without case)" }))
})

export const AccountList = pageOf("accounts", AccountListItem)

export const KeyList = Schema.Struct({ keys: Schema.Array(ApiKeyView) })

export const LedgerParams = Schema.Struct({
  limit: Schema.optionalKey(
    Schema.FiniteFromString.annotate(documentedAs({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: MAX_PAGE_SIZE }))
  ),
  cursor: paging.cursor
})

export const AdminJobListItem = Schema.Struct({
  jobId: Schema.String,
  accountId: Schema.String,
  model: Schema.String,
  version: Schema.String,
  status: JobStatus,
  progress: Schema.Number,
  costMicroCents: Schema.Number,
  attempts: Schema.Number,
  createdAt: Schema.String,
  startedAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  /** A failed job's failure type (issue 38); null for any other job. */
  failureType: Schema.NullOr(FailureType)
})

export const AdminJobView = AdminJobListItem.mapFields(
  Struct.assign({
    requestId: Schema.String,
    input: Schema.Record(Schema.String, Schema.Unknown),
    webhookUrl: Schema.NullOr(Schema.String),
    output: Schema.NullOr(Schema.String),
    outputs: Schema.NullOr(Schema.Array(OutputItemView)),
    error: Schema.NullOr(JobError),
    estimatedCompletionTime: Schema.String,
    providerProgress: ProviderProgress,
    /** The route the generation was started on; null before a start, or for a start that finished in its call. */
    route: Schema.NullOr(Schema.Struct({
      index: Schema.Number,
      providerId: Schema.String,
      credentialId: Schema.NullOr(Schema.String)
    }))
  })
)

const time = (description: string) =>
  Schema.optionalKey(Schema.String.annotate({ description, format: "date-time" }))

export const AdminJobListParams = Schema.Struct({
  ...paging,
  accountId: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(StatusFilter(JobStatus.literals)),
  model: Schema.optionalKey(Schema.String.annotate({ description: "A model slug" })),
  createdFrom: time("Jobs created at or after this ISO 8601 time"),
  createdBefore: time("Jobs created before this ISO 8601 time")
})

export const AdminJobList = pageOf("jobs", AdminJobListItem)

export const AdminJobIdPath = Schema.Struct({ jobId: Schema.String })

export const AdminDeliveryView = DeliveryView.mapFields(Struct.assign({ accountId: Schema.String }))

export const AdminDeliveryListParams = Schema.Struct({
  ...paging,
  accountId: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(StatusFilter(DeliveryStatus.literals))
})

export const AdminDeliveryList = pageOf("deliveries", AdminDeliveryView)

export const AuditEntryView = Schema.Struct({
  id: Schema.String,
  actor: Schema.String,
  action: RecordedAuditAction,
  target: Schema.String,
  summary: Schema.Record(Schema.String, Schema.Unknown),
  requestId: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})

export const AuditParams = Schema.Struct({
  ...paging,
  actor: Schema.optionalKey(Schema.String.annotate({ description: "An admin token's name" })),
  action: Schema.optionalKey(StatusFilter(AuditAction.literals)),
  target: Schema.optionalKey(Schema.String.annotate({ description: "An account id, key id, or catalog" }))
})

export const AuditList = pageOf("entries", AuditEntryView)

/** One provider credential's circuit (see docs/providers.md#provider-health). */
export const ProviderCredentialHealth = Schema.Struct({
  providerId: Schema.String,
  /** The credential's id, never its secret; "default" for a provider with one credential. */
  credentialId: Schema.String,
  state: Schema.Literals(["closed", "open", "half_open"]),
  consecutiveFailures: Schema.Number,
  /** When the circuit last opened; null while it is closed. */
  openedAt: Schema.NullOr(Schema.String),
  /** Generations this process follows on the credential now. */
  inFlight: Schema.Number
})

export const ProviderHealthList = Schema.Struct({ providers: Schema.Array(ProviderCredentialHealth) })
