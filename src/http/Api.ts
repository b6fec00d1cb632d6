import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CatalogDocument } from "../domain/catalog.js"
import { NewAccount, NewApiKey } from "../services/Admin.js"
import { documentedErrors } from "./errorEnvelope.js"
import { AdminAuth, ApiKeyAuth, OptionalApiKeyAuth } from "./middleware.js"
import { AccountOverviewView } from "./schemas/account.js"
import {
  CapabilityItem,
  CatalogModelDetail,
  CatalogModelItem,
  CatalogProviderDetail,
  CatalogProviderItem,
  CategoryItem,
  ModelDetail,
  ModelList,
  ProviderIdPath,
  ProviderList,
  ProviderModelsPath,
  ProviderWithModels,
  SlugPath
} from "./schemas/catalog.js"
import {
  AccountView,
  CatalogImportResult,
  CreatedApiKeyView,
  CreditsBody,
  ApiKeyView,
  IdPath,
  LedgerView,
  RotateSecretBody
} from "./schemas/admin.js"
import {
  CancelResponse,
  CostEstimateView,
  EstimateBody,
  JobIdPath,
  JobList,
  JobListParams,
  JobView,
  SubmitBody,
  SubmitHeaders,
  SubmitResponse
} from "./schemas/jobs.js"
import { PresignBody, PresignResponse, UploadIdPath, UploadResponse } from "./schemas/uploads.js"
import { DeliveryIdPath, DeliveryList, DeliveryListParams, DeliveryView } from "./schemas/webhooks.js"

export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("submit", "/v1/jobs/submit")
      .setPayload(SubmitBody)
      .setHeaders(SubmitHeaders)
      .addSuccess(SubmitResponse)
      .annotate(OpenApi.Description, "Submit a job (scope submit_job). Optional Idempotency-Key header.")
  )
  .add(
    HttpApiEndpoint.post("estimate", "/v1/jobs/estimate")
      .setPayload(EstimateBody)
      .addSuccess(CostEstimateView)
      .annotate(OpenApi.Description, "Estimate a job's cost (scope check_status)")
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/jobs")
      .setUrlParams(JobListParams)
      .addSuccess(JobList)
      .annotate(OpenApi.Description, "List the account's jobs, newest first, cursor-paged (scope check_status)")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/jobs/:jobId")
      .setPath(JobIdPath)
      .addSuccess(JobView)
      .annotate(OpenApi.Description, "A job's status and outputs (scope check_status)")
  )
  .add(
    HttpApiEndpoint.post("cancel", "/v1/jobs/:jobId/cancel")
      .setPath(JobIdPath)
      .addSuccess(CancelResponse)
      .annotate(OpenApi.Description, "Cancel a pending job and refund it (scope submit_job)")
  )
  .middleware(ApiKeyAuth)
{}

export class CatalogGroup extends HttpApiGroup.make("catalog")
  .add(HttpApiEndpoint.get("models", "/v1/catalog/models").addSuccess(Schema.Array(CatalogModelItem)))
  .add(HttpApiEndpoint.get("model", "/v1/catalog/models/*").setPath(SlugPath).addSuccess(CatalogModelDetail))
  .add(HttpApiEndpoint.get("providers", "/v1/catalog/providers").addSuccess(Schema.Array(CatalogProviderItem)))
  .add(HttpApiEndpoint.get("provider", "/v1/catalog/providers/:id").setPath(ProviderIdPath).addSuccess(CatalogProviderDetail))
  .add(HttpApiEndpoint.get("categories", "/v1/catalog/categories").addSuccess(Schema.Array(CategoryItem)))
  .add(HttpApiEndpoint.get("capabilityGroups", "/v1/catalog/capability-groups").addSuccess(Schema.Array(CapabilityItem)))
  .middleware(OptionalApiKeyAuth)
  .annotate(OpenApi.Description, "Public catalog; an optional Bearer key personalises visibility and pricing")
{}

export class ModelsGroup extends HttpApiGroup.make("models")
  .add(HttpApiEndpoint.get("list", "/v1/models").addSuccess(ModelList))
  .add(HttpApiEndpoint.get("get", "/v1/models/*").setPath(SlugPath).addSuccess(ModelDetail))
  .add(HttpApiEndpoint.get("providers", "/v1/providers").addSuccess(ProviderList))
  .add(
    HttpApiEndpoint.get("providerModels", "/v1/providers/:providerId/models")
      .setPath(ProviderModelsPath)
      .addSuccess(ProviderWithModels)
  )
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "Models and providers (scope list_models; x-api-key or Bearer); cached 5 minutes")
{}

export class UploadsGroup extends HttpApiGroup.make("uploads")
  .add(
    HttpApiEndpoint.post("presign", "/v1/uploads/presign")
      .setPayload(PresignBody)
      .addSuccess(PresignResponse)
      .annotate(
        OpenApi.Description,
        "A URL to PUT one file to within 15 minutes; the file lives 60 minutes (any active key). " +
          "An optional size (bytes) binds the exact length into the URL."
      )
  )
  .add(HttpApiEndpoint.get("get", "/v1/uploads/:id").setPath(UploadIdPath).addSuccess(UploadResponse))
  .middleware(ApiKeyAuth)
{}

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("list", "/v1/webhooks/deliveries")
      .setUrlParams(DeliveryListParams)
      .addSuccess(DeliveryList)
      .annotate(OpenApi.Description, "The account's webhook deliveries with their attempts, newest first (scope check_status)")
  )
  .add(
    HttpApiEndpoint.post("retry", "/v1/webhooks/deliveries/:id/retry")
      .setPath(DeliveryIdPath)
      .addSuccess(DeliveryView)
      .annotate(OpenApi.Description, "Send a failed delivery once more (scope submit_job)")
  )
  .middleware(ApiKeyAuth)
{}

export class AccountGroup extends HttpApiGroup.make("account")
  .add(HttpApiEndpoint.get("get", "/v1/account").addSuccess(AccountOverviewView))
  .middleware(ApiKeyAuth)
  .annotate(
    OpenApi.Description,
    "The calling key's account (balance, concurrent-job limit, jobs in flight) and the key itself; any active key"
  )
{}

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.put("replaceCatalog", "/admin/catalog").setPayload(CatalogDocument).addSuccess(CatalogImportResult))
  .add(HttpApiEndpoint.get("exportCatalog", "/admin/catalog").addSuccess(CatalogDocument))
  .add(HttpApiEndpoint.get("catalogSchema", "/admin/catalog/schema").addSuccess(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
  .add(
    HttpApiEndpoint.post("createAccount", "/admin/accounts")
      .setPayload(NewAccount)
      .addSuccess(AccountView, { status: 201 })
  )
  .add(HttpApiEndpoint.get("getAccount", "/admin/accounts/:id").setPath(IdPath).addSuccess(AccountView))
  .add(HttpApiEndpoint.get("ledger", "/admin/accounts/:id/ledger").setPath(IdPath).addSuccess(LedgerView))
  .add(
    HttpApiEndpoint.post("addCredits", "/admin/accounts/:id/credits")
      .setPath(IdPath)
      .setPayload(CreditsBody)
      .addSuccess(AccountView)
  )
  .add(
    HttpApiEndpoint.post("createKey", "/admin/accounts/:id/keys")
      .setPath(IdPath)
      .setPayload(NewApiKey)
      .addSuccess(CreatedApiKeyView, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/admin/accounts/:id/webhook-secret/rotate")
      .setPath(IdPath)
      .setPayload(RotateSecretBody)
      .addSuccess(AccountView)
  )
  .add(HttpApiEndpoint.post("deactivateKey", "/admin/keys/:id/deactivate").setPath(IdPath).addSuccess(ApiKeyView))
  .middleware(AdminAuth)
  .annotate(OpenApi.Description, "Operator API: Authorization: Bearer $ADMIN_TOKEN")
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
  .addError(documentedErrors[0])
  .addError(documentedErrors[1])
  .addError(documentedErrors[2])
  .addError(documentedErrors[3])
  .addError(documentedErrors[4])
  .addError(documentedErrors[5])
  .addError(documentedErrors[6])
  .addError(documentedErrors[7])
  .addError(documentedErrors[8])
  .addError(documentedErrors[9])
  .annotate(OpenApi.Title, "Generation jobs engine")
{}
