import { ApiKeyExpired, ApiKeyInactive, InvalidApiKey, IpNotWhitelisted, OperationNotAllowed, Unauthorized, UnauthorizedAccess } from "./accessRefusals.js"
import type { ConcurrentJobsExceeded, IdempotencyKeyReused, InsufficientBalance, InvalidInput } from "./admission.js"
import type { BudgetExceeded } from "./budget.js"
import type { ModelAccessDenied, ModelNotFound, PreconditionFailed } from "./catalog.js"
import type { InternalError, NotFound, PubsubPublishFailed, ServiceUnavailable, ValidationError } from "./errors.js"
import type { JobCannotBeCancelled, JobNotFound } from "./job.js"
import type { PayloadTooLarge, RequestTimeout } from "./limits.js"
import type { RateLimitExceeded } from "./rateLimit.js"
import {
  FileTooLarge,
  InvalidContentType,
  LengthRequired,
  UploadAlreadyReceived,
  UploadUrlExpired,
  UploadUrlInvalid
} from "./uploadRefusals.js"
import type { DeliveryNotRetryable } from "./webhook.js"

/**
 * Every refusal the engine answers a request with, one class per spec code (docs/decisions.md,
 * "Typed errors"): what a public operation of the engine may fail with besides the store's
 * failures. An embedder matches one with `Effect.catchTag` on its tag.
 */
export type EngineRefusal =
  | ValidationError
  | InvalidInput
  | InvalidContentType
  | Unauthorized
  | InvalidApiKey
  | ApiKeyInactive
  | ApiKeyExpired
  | InsufficientBalance
  | BudgetExceeded
  | IpNotWhitelisted
  | OperationNotAllowed
  | ModelAccessDenied
  | UnauthorizedAccess
  | ModelNotFound
  | JobNotFound
  | NotFound
  | JobCannotBeCancelled
  | IdempotencyKeyReused
  | DeliveryNotRetryable
  | PreconditionFailed
  | UploadUrlInvalid
  | UploadUrlExpired
  | UploadAlreadyReceived
  | FileTooLarge
  | PayloadTooLarge
  | LengthRequired
  | RequestTimeout
  | ConcurrentJobsExceeded
  | RateLimitExceeded
  | PubsubPublishFailed
  | ServiceUnavailable
  | InternalError
