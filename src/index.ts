/** The engine's core: composition over ports, services, ports, errors, webhook verification. */
export {
  composeEngine,
  type Engine,
  type EngineContext,
  type EngineParts,
  EngineServicesLive,
  type FilePorts,
  startEngine,
  type StartOptions,
  type StorePorts
} from "./engine.js"
export { type EngineFetch, makeWebHandler, type RequestInfo, type WebHandlerOptions } from "./http/webHandler.js"
export { HttpConfig, type HttpOptions, type HttpSettings } from "./http/HttpConfig.js"
export { EngineConfig, type EngineSettings, defaultEngineSettings } from "./services/EngineConfig.js"
export { Accounts, type AccountOverview } from "./services/Accounts.js"
export { Admin } from "./services/Admin.js"
export { AdminReads, type Page } from "./services/AdminReads.js"
export { Auth, type Caller } from "./services/Auth.js"
export { Catalog } from "./services/Catalog.js"
export { Jobs } from "./services/Jobs.js"
export { JobFollow, MAX_WAIT_SECONDS } from "./services/JobFollow.js"
export { QueueBook } from "./services/QueueBook.js"
export { Worker } from "./services/Worker.js"
export { Uploads, UploadSigningSecret } from "./services/Uploads.js"
export { UploadSweeper, type SweepResult } from "./services/UploadSweeper.js"
export { RetentionSweeper, type RetentionSweep } from "./services/RetentionSweeper.js"
export { Webhooks } from "./services/Webhooks.js"
export { WebhookDispatcher } from "./services/WebhookDispatcher.js"
export { AccountRepo } from "./ports/AccountRepo.js"
export { AccountSettingsRepo, type AccountPatch } from "./ports/AccountSettingsRepo.js"
export { type AccountQuery, type AdminDeliveryQuery, type AdminJobQuery, AdminReadRepo, type LedgerQuery } from "./ports/AdminReadRepo.js"
export { AuditLog, type AuditQuery } from "./ports/AuditLog.js"
export { ApiKeyRepo } from "./ports/ApiKeyRepo.js"
export { type Blob, type BlobReader, BlobStore } from "./ports/BlobStore.js"
export { CatalogRepo } from "./ports/CatalogRepo.js"
export {
  CallbackRejected,
  type CallbackRequest,
  type Failed,
  type GenerationProvider,
  layerProviders,
  type OutputSource,
  type ProviderCallback,
  type ProviderError,
  ProviderHandle,
  type ProviderOutput,
  ProviderRejected,
  type ProviderRequest,
  Providers,
  type ProviderStatus,
  ProviderUnreachable,
  type Recovered,
  type Running,
  type StartOutcome,
  type Succeeded
} from "./ports/Provider.js"
export { callbackUrlOf, providerRequestOf } from "./services/providerRequest.js"
export { type HeldLease, JobRepo } from "./ports/JobRepo.js"
export type { ClaimBatch, ClaimBatchOfIds, HeldEnding, JobDrivers, JobLeaseDriver, QueuePosition } from "./ports/JobLeaseDriver.js"
export type { IdempotencyRecord, JobLedgerEntry, JobStoreDriver, RateKey } from "./ports/JobStoreDriver.js"
export { makeJobRepo } from "./services/jobRepoRules.js"
export { JobQueue, type QueueConsumer, type QueueDelivery } from "./ports/JobQueue.js"
export { JobSignal } from "./ports/JobSignal.js"
export { JobEvents } from "./ports/JobEvents.js"
export { WebhookSignal } from "./ports/WebhookSignal.js"
export { UploadRepo } from "./ports/UploadRepo.js"
export { RetentionRepo, type RetentionFilter } from "./ports/RetentionRepo.js"
export { JobLogRepo, type ProviderReport } from "./ports/JobLogRepo.js"
export { ChangeFeed, type ChangeQuery } from "./ports/ChangeFeed.js"
export type { ChangeEntry, ChangePosition, ChangeRead, JobChange } from "./domain/change.js"
export { UploadTarget } from "./ports/UploadTarget.js"
export { WebhookDeliveryRepo } from "./ports/WebhookDeliveryRepo.js"
export { WebhookSender } from "./ports/WebhookSender.js"
export {
  type EngineError,
  InternalError,
  NotFound,
  PubsubPublishFailed,
  QueueError,
  ServiceUnavailable,
  StoreError,
  ValidationError
} from "./domain/errors.js"
export type { EngineRefusal } from "./domain/refusals.js"
export { type AnyRefusal, isRefusal, Refusal, type RefusalAnswer, RefusalDetails, RetryLaterRefusal } from "./domain/refusal.js"
export {
  ApiKeyExpired,
  ApiKeyInactive,
  InvalidApiKey,
  IpNotWhitelisted,
  OperationNotAllowed,
  Unauthorized,
  UnauthorizedAccess
} from "./domain/accessRefusals.js"
export { ConcurrentJobsExceeded, IdempotencyKeyReused, InsufficientBalance, InvalidInput } from "./domain/admission.js"
export { BudgetExceeded } from "./domain/budget.js"
export { ModelAccessDenied, ModelNotFound, PreconditionFailed } from "./domain/catalog.js"
export { JobCannotBeCancelled, JobNotFound } from "./domain/job.js"
export { PayloadTooLarge, RequestTimeout } from "./domain/limits.js"
export { RateLimitExceeded } from "./domain/rateLimit.js"
export {
  FileTooLarge,
  InvalidContentType,
  LengthRequired,
  UploadAlreadyReceived,
  UploadUrlExpired,
  UploadUrlInvalid
} from "./domain/uploadRefusals.js"
export { DeliveryNotRetryable } from "./domain/webhook.js"
export { signatureHeader, signWebhook, verifyWebhook, type VerifyResult } from "./domain/webhookSignature.js"
export { type ClaimCandidate, fairClaims } from "./domain/webhookClaims.js"
export { Job, JobError, JobStatus, OutputItem, OutputType } from "./domain/job.js"
export { classifyFailure, type FailureClass, type FailureFact, type ProviderFacts, FailureType } from "./domain/failureTaxonomy.js"
export { CatalogDocument, CatalogModel, ModelVersion, ProviderMapping, providerInputOf } from "./domain/catalog.js"
export { type ProviderPhase, type ProviderState } from "./domain/providerHandle.js"
export { DEFAULT_OUTPUT_SIZE_CAPS, type OutputSizeCaps } from "./domain/outputFiles.js"
export { checkCatalogDocument } from "./domain/catalogCheck.js"
export { type CatalogDiff, catalogDiff, isEmptyDiff, type PartDiff } from "./domain/catalogDiff.js"
export { unregisteredLine, type UnregisteredVersion } from "./domain/catalogServing.js"
export { AuditAction, type AuditActor, AuditEntry, RecordedAuditAction, SYSTEM_ACTOR } from "./domain/audit.js"
export { Account, AccountUpdate, ApiKey, ApiKeyUpdate, LedgerEntry, Scope } from "./domain/account.js"
export { Budget, BudgetPeriod, type BudgetScope } from "./domain/budget.js"
export type { SpendDimension, SpendGroup, SpendQuery } from "./domain/spend.js"
export { ENGINE_VERSION } from "./version.js"
