import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CatalogDocument, ModelAccessDenied, ModelNotFound, PreconditionFailed } from "../domain/catalog.js"
import { OperationNotAllowed, UnauthorizedAccess } from "../domain/accessRefusals.js"
import { ConcurrentJobsExceeded, IdempotencyKeyReused, InsufficientBalance, InvalidInput } from "../domain/admission.js"
import { BudgetExceeded } from "../domain/budget.js"
import { NotFound, PubsubPublishFailed, ServiceUnavailable, ValidationError } from "../domain/errors.js"
import { RateLimitExceeded } from "../domain/rateLimit.js"
import { JobCannotBeCancelled, JobNotFound } from "../domain/job.js"
import { DeliveryNotRetryable } from "../domain/webhook.js"
import { FileTooLarge, InvalidContentType } from "../domain/uploadRefusals.js"
import { ChangesGroup } from "./changesApi.js"
import { refusing } from "./errorEnvelope.js"
import { AdminAuth, ApiKeyAuth, OptionalApiKeyAuth } from "./middleware.js"
import { adminSecurity, finishDocument, keySecurity, optionalKeySecurity } from "./openApi.js"
import { AccountOverviewView } from "./schemas/account.js"
import { AccountSpendParams, AdminSpendParams, SpendView } from "./schemas/spend.js"
import { AdminStatsParams, StatsView } from "./schemas/stats.js"
import { QueueBoardView } from "./schemas/queue.js"
import {
  CapabilityItem,
  CatalogModelDetail,
  CatalogModelItem,
  CatalogProviderDetail,
  CatalogProviderItem,
  CatalogSlugPath,
  CategoryItem,
  ModelDetail,
  ModelIdPath,
  ModelList,
  ProviderIdPath,
  ProviderList,
  ProviderModelsPath,
  ProviderWithModels
} from "./schemas/catalog.js"
import {
  AccountList,
  AccountListParams,
  AccountUpdateBody,
  AccountView,
  AdminDeliveryList,
  AdminDeliveryListParams,
  AdminDeliveryView,
  AdminJobIdPath,
  AdminJobList,
  AdminJobListParams,
  AdminJobView,
  AuditList,
  ProviderHealthList,
  AuditParams,
  CatalogBody,
  CatalogImportResult,
  CatalogReplaceHeaders,
  CatalogPreviewView,
  CreatedApiKeyView,
  CreditsBody,
  ApiKeyUpdateBody,
  ApiKeyView,
  IdPath,
  KeyList,
  LedgerParams,
  LedgerView,
  NewAccountBody,
  NewApiKeyBody,
  RotateSecretBody
} from "./schemas/admin.js"
import {
  CancelResponse,
  CostEstimateView,
  EstimateBody,
  JobEventsHeaders,
  JobIdPath,
  JobList,
  JobListParams,
  JobView,
  SubmitBody,
  SubmitHeaders,
  SubmitResponse,
  SubmitWaitedResponse
} from "./schemas/jobs.js"
import { JobLogPage, JobLogParams } from "./schemas/jobLogs.js"
import { strictBody } from "./schemas/strictBody.js"
import { PresignBody, PresignResponse, UploadIdPath, UploadResponse } from "./schemas/uploads.js"
import { DeliveryIdPath, DeliveryList, DeliveryListParams, DeliveryView } from "./schemas/webhooks.js"
import { ENGINE_VERSION } from "../version.js"

/*
 * Every endpoint decodes and answers JSON as its schemas write it (`disableCodecs`): Effect 4's
 * derived JSON codecs would take `null` for an absent optional field, answer `null` for an
 * undefined one, and take "NaN" or "Infinity" for a number, none of which the engine's API does.
 */

/** An operation's summary (its line in the reference's sidebar) and description. */
const docs = (summary: string, description: string) => OpenApi.annotations({ summary, description })

export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("submit", "/v1/jobs/submit", {
      disableCodecs: true,
      headers: SubmitHeaders,
      payload: SubmitBody,
      error: refusing(
        ValidationError,
        OperationNotAllowed,
        ModelNotFound,
        ModelAccessDenied,
        InvalidInput,
        InsufficientBalance,
        BudgetExceeded,
        ConcurrentJobsExceeded,
        RateLimitExceeded,
        IdempotencyKeyReused,
        PubsubPublishFailed,
        // Prefer: wait beyond the watcher cap.
        ServiceUnavailable
      ),
      // Strict, so a waited answer (extra fields) is not encoded as the plain one, fields dropped.
      success: [SubmitResponse, SubmitWaitedResponse]
    })
      .annotateMerge(strictBody)
      .annotate(HttpApi.SuccessParseOptions, { onExcessProperty: "error" })
      .annotateMerge(docs(
        "Submit a job",
        "Charges the job's cost and queues it (scope submit_job). `model` is the slug (alias `modelSlug`), `version` " +
          "(alias `modelVersion`) defaults to the latest stable one. With an `Idempotency-Key` header, a retry with " +
          "the same body within 24 hours answers the first job again (`Idempotent-Replayed: true`) and charges once. " +
          "With `Prefer: wait=N` the answer waits until the job is final or N seconds (at most 60) pass, and adds the " +
          "job's current fields (status, progress, outputs, error, completedAt); `Preference-Applied` says so."
      ))
  )
  .add(
    HttpApiEndpoint.post("estimate", "/v1/jobs/estimate", {
      disableCodecs: true,
      payload: EstimateBody,
      success: CostEstimateView,
      error: refusing(ValidationError, OperationNotAllowed, ModelNotFound, ModelAccessDenied, InvalidInput)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Estimate a job's cost",
        "The cost submit would charge, with discounts (scope check_status). A given `input` is checked as submit checks it."
      ))
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/jobs", {
      disableCodecs: true,
      query: JobListParams.fields,
      success: JobList,
      error: refusing(ValidationError, OperationNotAllowed)
    }).annotateMerge(docs(
        "List jobs",
        "The account's jobs, newest first (scope check_status). Follow `nextCursor` while `hasMore` is true."
      ))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/jobs/:jobId", {
      disableCodecs: true,
      params: JobIdPath,
      success: JobView,
      error: refusing(OperationNotAllowed, JobNotFound, UnauthorizedAccess, ServiceUnavailable)
    }).annotateMerge(docs(
        "Get a job",
        "A job's status, progress and outputs (scope check_status). With `Prefer: wait=N` the answer waits until " +
          "the job is completed, failed or cancelled, or N seconds (at most 60) pass; `Preference-Applied: wait=N` says so. " +
          "Beside the spec's fields, a pending job has `queue`: its position among the jobs waiting for the same capacity " +
          "and its estimated start and end (p50, p90)."
      ))
  )
  .add(
    HttpApiEndpoint.get("events", "/v1/jobs/:jobId/events", {
      disableCodecs: true,
      params: JobIdPath,
      headers: JobEventsHeaders,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
      error: refusing(OperationNotAllowed, JobNotFound, UnauthorizedAccess, ServiceUnavailable)
    }).annotateMerge(docs(
        "Follow a job's status",
        "Server-sent events (scope check_status): one event per status change whose data is the job as GET " +
          "/v1/jobs/{jobId} answers it, the last one on completed, failed or cancelled, after which the stream ends. " +
          "Event ids are 1 (pending), 2 (processing), 3 (final); `Last-Event-ID` resumes after the one given. While the " +
          "job runs, a rise of its `providerProgress` comes as the same job event without an id, and each new provider " +
          "log line as an `event: log` whose data is a line as GET /v1/jobs/{jobId}/logs answers it (lines logged " +
          "before the stream opened are not sent again: read them there). A " +
          "comment line every 15 seconds keeps idle connections open. While the job is pending, events named `queue` " +
          "(no id, so `onmessage` listeners never see them) carry its place as GET's `queue` field: at the start, then on each change."
      ))
  )
  .add(
    HttpApiEndpoint.get("logs", "/v1/jobs/:jobId/logs", {
      disableCodecs: true,
      params: JobIdPath,
      query: JobLogParams.fields,
      success: JobLogPage,
      error: refusing(ValidationError, OperationNotAllowed, JobNotFound, UnauthorizedAccess)
    }).annotateMerge(docs(
        "Read a job's provider log",
        "The lines the job's provider logged while it ran, oldest first, redacted of secrets (scope check_status; " +
          "another account's job is refused as GET /v1/jobs/{jobId} refuses it). A job keeps at most 1,000 lines and " +
          "256 KiB; past that one marker line ends its log. Only providers that report logs have lines (docs/providers.md). " +
          "Follow `nextCursor`: it stays present while the job may still log, and the stream's `log` events carry new lines."
      ))
  )
  .add(
    HttpApiEndpoint.post("cancel", "/v1/jobs/:jobId/cancel", {
      disableCodecs: true,
      params: JobIdPath,
      success: CancelResponse,
      error: refusing(OperationNotAllowed, JobNotFound, UnauthorizedAccess, JobCannotBeCancelled)
    }).annotateMerge(docs("Cancel a job", "Cancels a pending job and refunds what it was charged (scope submit_job)."))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "Generation jobs: submit, follow, list, estimate and cancel")
{}

const catalogModel = HttpApiEndpoint.get("model", "/v1/catalog/models/:slug", {
  disableCodecs: true,
  params: CatalogSlugPath,
  success: CatalogModelDetail,
  error: refusing(ModelNotFound)
})

export class CatalogGroup extends HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("models", "/v1/catalog/models", {
      disableCodecs: true,
      success: Schema.Array(CatalogModelItem)
    }).annotateMerge(docs("List catalog models", "The models the caller may see, with their pricing in credits."))
  )
  .add(catalogModel.annotateMerge(docs(
    "Get a catalog model",
    "A model's detail with its input schema; provider/model answers the default capability. The slug's slashes " +
      "may also be sent as they are (/v1/catalog/models/demo/image-gen), as the spec writes it."
  )))

  .add(
    HttpApiEndpoint.get("providers", "/v1/catalog/providers", {
      disableCodecs: true,
      success: Schema.Array(CatalogProviderItem)
    }).annotateMerge(docs("List catalog providers", "Providers with at least one model the caller may see."))
  )
  .add(
    HttpApiEndpoint.get("provider", "/v1/catalog/providers/:id", {
      disableCodecs: true,
      params: ProviderIdPath,
      success: CatalogProviderDetail,
      error: refusing(NotFound)
    }).annotateMerge(docs("Get a catalog provider", "A provider with the models the caller may see."))
  )
  .add(
    HttpApiEndpoint.get("categories", "/v1/catalog/categories", {
      disableCodecs: true,
      success: Schema.Array(CategoryItem)
    }).annotateMerge(docs("List categories", "Categories with the number of models the caller may see."))
  )
  .add(
    HttpApiEndpoint.get("capabilityGroups", "/v1/catalog/capability-groups", {
      disableCodecs: true,
      success: Schema.Array(CapabilityItem)
    }).annotateMerge(docs("List capability groups", "Capabilities (text-to-image, ...) in display order."))
  )
  .middleware(OptionalApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: optionalKeySecurity })
  .annotate(OpenApi.Description, "Public catalog; an optional key personalises visibility and pricing")
{}

export class ModelsGroup extends HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("list", "/v1/models", {
      disableCodecs: true,
      success: ModelList,
      error: refusing(OperationNotAllowed)
    }).annotateMerge(docs("List models", "Models with their current version and its pricing (scope list_models; cached 5 minutes)."))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/models/:modelId", {
      disableCodecs: true,
      params: ModelIdPath,
      success: ModelDetail,
      error: refusing(OperationNotAllowed, ModelNotFound)
    }).annotateMerge(docs(
        "Get a model",
        "A model with all its versions (scope list_models). The slug's slashes may also be sent as they are (/v1/models/demo/image-gen/text-to-image)."
      ))
  )

  .add(
    HttpApiEndpoint.get("providers", "/v1/providers", {
      disableCodecs: true,
      success: ProviderList,
      error: refusing(OperationNotAllowed)
    }).annotateMerge(docs("List providers", "Providers with their categories (scope list_models; cached 5 minutes)."))
  )
  .add(
    HttpApiEndpoint.get("providerModels", "/v1/providers/:providerId/models", {
      disableCodecs: true,
      params: ProviderModelsPath,
      success: ProviderWithModels,
      error: refusing(OperationNotAllowed, NotFound)
    }).annotateMerge(docs("List a provider's models", "A provider and its models (scope list_models)."))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "Models and providers with their versions (scope list_models); cached 5 minutes")
{}

export class UploadsGroup extends HttpApiGroup.make("uploads")
  .add(
    HttpApiEndpoint.post("presign", "/v1/uploads/presign", {
      disableCodecs: true,
      payload: PresignBody,
      success: PresignResponse,
      error: refusing(ValidationError, InvalidContentType, FileTooLarge)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Get an upload URL",
        "A URL to PUT one file to within 15 minutes; the file lives 60 minutes (any active key). " +
          "An optional size (bytes) binds the exact length into the URL."
      ))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/uploads/:id", {
      disableCodecs: true,
      params: UploadIdPath,
      success: UploadResponse,
      error: refusing(NotFound)
    }).annotateMerge(docs("Get an upload", "An upload's status: pending while the file is kept, expired once deleted (any active key)."))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "Temporary input files, referenced by their fileUrl in a job's input")
{}

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("list", "/v1/webhooks/deliveries", {
      disableCodecs: true,
      query: DeliveryListParams.fields,
      success: DeliveryList,
      error: refusing(ValidationError, OperationNotAllowed)
    }).annotateMerge(docs("List webhook deliveries", "The account's deliveries with their attempts, newest first (scope check_status)."))
  )
  .add(
    HttpApiEndpoint.post("retry", "/v1/webhooks/deliveries/:id/retry", {
      disableCodecs: true,
      params: DeliveryIdPath,
      success: DeliveryView,
      error: refusing(OperationNotAllowed, NotFound, DeliveryNotRetryable)
    }).annotateMerge(docs("Retry a webhook delivery", "Sends a failed delivery once more (scope submit_job)."))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "Signed webhooks sent when jobs finish, and their delivery records")
{}

export class AccountGroup extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("get", "/v1/account", {
      disableCodecs: true,
      success: AccountOverviewView
    }).annotateMerge(docs(
        "Get your account",
        "The calling key's account (balance, concurrent-job limit, jobs in flight, budget) and the key itself with its budget; " +
          "each budget with what its current period has spent and when it resets. Any active key, whatever its scopes."
      ))
  )
  .add(
    HttpApiEndpoint.get("spend", "/v1/account/spend", {
      disableCodecs: true,
      query: AccountSpendParams.fields,
      success: SpendView,
      error: refusing(ValidationError, OperationNotAllowed)
    }).annotateMerge(docs(
        "Get your account's spend",
        "The account's charges, refunds, jobs, failures and cancellations, summed by key, model, day or hour (UTC; one or two, " +
          "comma-separated), over at most 366 days (scope check_status). A job counts in the hour it was submitted."
      ))
  )
  .middleware(ApiKeyAuth)
  .annotateEndpoints(OpenApi.Override, { security: keySecurity })
  .annotate(OpenApi.Description, "What a key holder may know of their own account")
{}

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.put("replaceCatalog", "/admin/catalog", {
      disableCodecs: true,
      headers: CatalogReplaceHeaders,
      payload: CatalogBody,
      success: CatalogImportResult,
      error: refusing(ValidationError, PreconditionFailed)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Replace the catalog",
        "Validates and stores a whole catalog document; the revision grows by one (the answer's ETag is the new one). " +
          "With If-Match, only if the stored catalog is still that revision."
      ))
  )
  .add(
    HttpApiEndpoint.post("previewCatalog", "/admin/catalog/diff", {
      disableCodecs: true,
      payload: CatalogBody,
      success: CatalogPreviewView,
      error: refusing(ValidationError)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Preview a catalog replacement",
        "Checks a document as PUT /admin/catalog does (an invalid one is VALIDATION_ERROR with its reasons) and " +
          "answers what it would add, remove and change, by id; stores nothing."
      ))
  )
  .add(
    HttpApiEndpoint.get("exportCatalog", "/admin/catalog", {
      disableCodecs: true,
      success: CatalogDocument
    }).annotateMerge(docs("Export the catalog", "The catalog document as stored; its ETag is the revision (\"7\"), for If-Match on PUT."))
  )
  .add(
    HttpApiEndpoint.get("catalogSchema", "/admin/catalog/schema", {
      disableCodecs: true,
      success: Schema.Record(Schema.String, Schema.Unknown)
    }).annotateMerge(docs("Get the catalog's JSON Schema", "The JSON Schema a catalog document must match."))
  )
  .add(
    HttpApiEndpoint.post("createAccount", "/admin/accounts", {
      disableCodecs: true,
      payload: NewAccountBody,
      success: AccountView.pipe(HttpApiSchema.status(201))
    }).annotateMerge(strictBody).annotateMerge(docs("Create an account", "An account with its opening credit, limits, segments and discounts."))
  )
  .add(
    HttpApiEndpoint.get("listAccounts", "/admin/accounts", {
      disableCodecs: true,
      query: AccountListParams.fields,
      success: AccountList,
      error: refusing(ValidationError)
    }).annotateMerge(docs(
        "List accounts",
        "Accounts newest first, without their webhook secrets; `search` keeps those whose name or id holds the " +
          "fragment. Follow `nextCursor` while `hasMore` is true."
      ))
  )
  .add(
    HttpApiEndpoint.get("getAccount", "/admin/accounts/:id", {
      disableCodecs: true,
      params: IdPath,
      success: AccountView,
      error: refusing(NotFound)
    }).annotateMerge(docs("Get an account", "An account with its balance and webhook secrets."))
  )
  .add(
    HttpApiEndpoint.patch("updateAccount", "/admin/accounts/:id", {
      disableCodecs: true,
      params: IdPath,
      payload: AccountUpdateBody,
      success: AccountView,
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Update an account",
        "Sets the name, maxConcurrentJobs, segments, allowedModels, discounts, budget or fairShareWeight sent, checked as on creation; the " +
          "others stay. Unknown fields and an empty body are VALIDATION_ERROR. Credits go through /credits."
      ))
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/admin/accounts/:id/keys", {
      disableCodecs: true,
      params: IdPath,
      success: KeyList,
      error: refusing(NotFound)
    }).annotateMerge(docs("List an account's API keys", "Every key of the account, oldest first: name, hint, scopes, allowed IPs, expiry, active. Never a secret."))
  )
  .add(
    HttpApiEndpoint.get("ledger", "/admin/accounts/:id/ledger", {
      disableCodecs: true,
      params: IdPath,
      query: LedgerParams.fields,
      success: LedgerView,
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(docs(
        "Get an account's ledger",
        "Credits, charges and refunds, oldest first, 100 per page unless `limit` says otherwise; the entries of all " +
          "pages sum to the balance."
      ))
  )
  .add(
    HttpApiEndpoint.post("addCredits", "/admin/accounts/:id/credits", {
      disableCodecs: true,
      params: IdPath,
      payload: CreditsBody,
      success: AccountView,
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(strictBody).annotateMerge(docs("Add credits", "Credits the account through its ledger."))
  )
  .add(
    HttpApiEndpoint.post("createKey", "/admin/accounts/:id/keys", {
      disableCodecs: true,
      params: IdPath,
      payload: NewApiKeyBody,
      success: CreatedApiKeyView.pipe(HttpApiSchema.status(201)),
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(strictBody).annotateMerge(docs("Create an API key", "A key with its scopes, allowed IPs and expiry; the secret is in this answer only."))
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/admin/accounts/:id/webhook-secret/rotate", {
      disableCodecs: true,
      params: IdPath,
      payload: RotateSecretBody,
      success: AccountView,
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(strictBody).annotateMerge(docs("Rotate the webhook secret", "A new secret; the old one keeps signing beside it for overlapSeconds."))
  )
  .add(
    HttpApiEndpoint.patch("updateKey", "/admin/keys/:id", {
      disableCodecs: true,
      params: IdPath,
      payload: ApiKeyUpdateBody,
      success: ApiKeyView,
      error: refusing(NotFound)
    }).annotateMerge(strictBody).annotateMerge(docs(
        "Update an API key",
        "Sets the key's budget ({limitMicroCents, period: day | month | total}, UTC periods), or removes it with null."
      ))
  )
  .add(
    HttpApiEndpoint.get("spend", "/admin/spend", {
      disableCodecs: true,
      query: AdminSpendParams.fields,
      success: SpendView,
      error: refusing(ValidationError, NotFound)
    }).annotateMerge(docs(
        "Read spend",
        "Charges, refunds, jobs, failures and cancellations from the hourly rollups, of every account or one (`accountId`), " +
          "summed by account, key, model, day or hour (UTC; one or two, comma-separated), over at most 366 days."
      ))
  )
  .add(
    HttpApiEndpoint.get("stats", "/admin/stats", {
      disableCodecs: true,
      query: AdminStatsParams.fields,
      success: StatsView,
      error: refusing(ValidationError)
    }).annotateMerge(docs(
        "Read the queue and run times",
        "Jobs pending (the queue's depth) and processing (in flight) now, and p50/p95 run time per model of the jobs " +
          "completed in the range (the last 24 hours unless asked)."
      ))
  )
  .add(
    HttpApiEndpoint.get("queue", "/admin/queue", {
      disableCodecs: true,
      success: QueueBoardView
    }).annotateMerge(docs(
        "Read the queue's places",
        "The waiting jobs per account and version, with the place and estimated start and end of each group's first and " +
          "last job, in the fair order (docs/queues.md, \"Queue position and ETA\"). Read at most once per poll interval."
      ))
  )
  .add(
    HttpApiEndpoint.post("deactivateKey", "/admin/keys/:id/deactivate", {
      disableCodecs: true,
      params: IdPath,
      success: ApiKeyView,
      error: refusing(NotFound)
    }).annotateMerge(docs("Deactivate an API key", "The key is refused from now on (API_KEY_INACTIVE)."))
  )
  .add(
    HttpApiEndpoint.get("listJobs", "/admin/jobs", {
      disableCodecs: true,
      query: AdminJobListParams.fields,
      success: AdminJobList,
      error: refusing(ValidationError)
    }).annotateMerge(docs(
        "List jobs across accounts",
        "Jobs of every account, newest first, filtered by account, status, model and creation time " +
          "(`createdFrom` inclusive, `createdBefore` exclusive, ISO 8601). Follow `nextCursor` while `hasMore` is true."
      ))
  )
  .add(
    HttpApiEndpoint.get("getJob", "/admin/jobs/:jobId", {
      disableCodecs: true,
      params: AdminJobIdPath,
      success: AdminJobView,
      error: refusing(JobNotFound)
    }).annotateMerge(docs("Get any job", "A job of any account with its input, outputs, error and attempts; JOB_NOT_FOUND when unknown."))
  )
  .add(
    HttpApiEndpoint.get("jobLogs", "/admin/jobs/:jobId/logs", {
      disableCodecs: true,
      params: AdminJobIdPath,
      query: JobLogParams.fields,
      success: JobLogPage,
      error: refusing(ValidationError, JobNotFound)
    }).annotateMerge(docs(
        "Read any job's provider log",
        "A job of any account's provider log, redacted as stored, paged as GET /v1/jobs/{jobId}/logs pages it (same " +
          "`lines`, `nextCursor` and `hasMore`); JOB_NOT_FOUND when unknown."
      ))
  )
  .add(
    HttpApiEndpoint.get("listDeliveries", "/admin/webhooks/deliveries", {
      disableCodecs: true,
      query: AdminDeliveryListParams.fields,
      success: AdminDeliveryList,
      error: refusing(ValidationError)
    }).annotateMerge(docs(
        "List webhook deliveries across accounts",
        "Deliveries of every account with their attempts, newest first, filtered by account and status."
      ))
  )
  .add(
    HttpApiEndpoint.post("retryDelivery", "/admin/webhooks/deliveries/:id/retry", {
      disableCodecs: true,
      params: DeliveryIdPath,
      success: AdminDeliveryView,
      error: refusing(NotFound, DeliveryNotRetryable)
    }).annotateMerge(docs(
        "Retry a webhook delivery of any account",
        "Sends a failed delivery once more, now (DELIVERY_NOT_RETRYABLE unless it has failed); recorded in the audit log."
      ))
  )
  .add(
    HttpApiEndpoint.get("auditLog", "/admin/audit", {
      disableCodecs: true,
      query: AuditParams.fields,
      success: AuditList,
      error: refusing(ValidationError)
    }).annotateMerge(docs(
        "Read the audit log",
        "Every admin write, newest first: the actor (the admin token's name), the action, its target, a summary " +
          "of the change without secrets, the request id and the time. Filter by actor, action or target."
      ))
  )
  .add(
    HttpApiEndpoint.get("providerHealth", "/admin/providers/health", {
      disableCodecs: true,
      success: ProviderHealthList
    }).annotateMerge(docs(
        "Read provider health",
        "Each registered provider and credential id (never a secret) with its circuit in this process: state " +
          "(closed, open, half_open), consecutive failures, when it opened, and generations in flight."
      ))
  )
  .middleware(AdminAuth)
  .annotateEndpoints(OpenApi.Override, { security: adminSecurity })
  .annotate(OpenApi.Description, "Operator API: Authorization: Bearer <admin token> (ADMIN_TOKEN or ADMIN_TOKENS); off (404) without one")
{}

/** Every error of every endpoint is the spec's envelope; one documented response per status. */
export class EngineApi extends HttpApi.make("genjobs")
  .add(JobsGroup)
  .add(AccountGroup)
  .add(CatalogGroup)
  .add(ModelsGroup)
  .add(UploadsGroup)
  .add(WebhooksGroup)
  .add(AdminGroup)
  .add(ChangesGroup)
  .annotateMerge(OpenApi.annotations({
    title: "Generation jobs engine",
    version: ENGINE_VERSION,
    description: "Submit AI generation jobs, follow them, and browse the model catalog.",
    license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
    // Relative: the document describes the server it is served by.
    servers: [{ url: "/", description: "This server" }],
    transform: (spec) => finishDocument(spec, [JobsGroup, AccountGroup, CatalogGroup, ModelsGroup, UploadsGroup, WebhooksGroup, AdminGroup, ChangesGroup])
  }))
{}
