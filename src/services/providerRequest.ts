import { type CatalogModel, type ModelVersion, providerInputOf, providerModelOf } from "../domain/catalog.js"
import type { Job } from "../domain/job.js"
import type { ProviderRequest } from "../ports/Provider.js"

/** The engine's callback address for a job, answered by the provider callback endpoint. */
export const callbackUrlOf = (publicUrl: string, providerId: string, jobId: string): string =>
  `${publicUrl.replace(/\/+$/, "")}/v1/providers/${encodeURIComponent(providerId)}/callbacks/${encodeURIComponent(jobId)}`

/**
 * What a provider is asked for a job: the version's `provider` mapping applied (the provider's
 * model id, else the model's slug; the mapped input, else the job's), the job id as the
 * idempotency key (the same for every attempt), and the callback address when there is one.
 */
export const providerRequestOf = (
  job: Job,
  model: CatalogModel,
  version: ModelVersion,
  callbackUrl?: string
): ProviderRequest => ({
  job,
  model,
  version,
  providerModel: providerModelOf(model, version),
  input: providerInputOf(version.provider, job.input),
  idempotencyKey: job.id,
  ...(callbackUrl === undefined ? {} : { callbackUrl })
})
