import { type CatalogModel, type EffectiveRoute, type ModelVersion, providerInputOf, routesOf } from "../domain/catalog.js"
import type { Job } from "../domain/job.js"
import type { ProviderRequest } from "../ports/Provider.js"

/** The engine's callback address for a job, answered by the provider callback endpoint. */
export const callbackUrlOf = (publicUrl: string, providerId: string, jobId: string): string =>
  `${publicUrl.replace(/\/+$/, "")}/v1/providers/${encodeURIComponent(providerId)}/callbacks/${encodeURIComponent(jobId)}`

/**
 * What a provider is asked for a job on one route (the version's first when none is given):
 * the route's mapping applied (the provider's model id, else the model's slug; the mapped
 * input, else the job's), the job id as the idempotency key (the same for every attempt and
 * route), the callback address when there is one, and the credential to call with.
 */
export const providerRequestOf = (
  job: Job,
  model: CatalogModel,
  version: ModelVersion,
  callbackUrl?: string,
  route: EffectiveRoute = routesOf(model, version)[0]!,
  credentialId?: string
): ProviderRequest => ({
  job,
  model,
  version,
  providerModel: route.model,
  input: providerInputOf(route.mapping, job.input),
  idempotencyKey: job.id,
  ...(callbackUrl === undefined ? {} : { callbackUrl }),
  ...(credentialId === undefined ? {} : { credentialId })
})
