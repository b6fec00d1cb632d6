import type { Account } from "../domain/account.js"
import type { AuditEntry } from "../domain/audit.js"
import { fairWeightOf } from "../domain/fairShare.js"
import { type Job, progressOf } from "../domain/job.js"
import type { ProviderRouteRef } from "../domain/providerHandle.js"
import type { CredentialHealth } from "../services/ProviderHealth.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import { deliveryView, iso, jobView } from "./views.js"

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms))

/** An account in a list: no webhook secret, so a page of accounts never carries credentials. */
export const accountListItem = (account: Account) => ({
  id: account.id,
  name: account.name,
  balanceMicroCents: account.balanceMicroCents,
  maxConcurrentJobs: account.maxConcurrentJobs,
  segments: account.segments,
  allowedModels: account.allowedModels,
  discounts: account.discounts,
  standardWebhooks: account.standardWebhooks,
  budget: account.budget ?? null,
  createdAt: iso(account.createdAt),
  fairShareWeight: fairWeightOf(account)
})

export const adminJobListItem = (job: Job) => ({
  jobId: job.id,
  accountId: job.accountId,
  model: job.model,
  version: job.version,
  status: job.status,
  progress: progressOf(job.status),
  costMicroCents: job.costMicroCents,
  attempts: job.attempts,
  createdAt: iso(job.createdAt),
  startedAt: isoOrNull(job.startedAt),
  completedAt: isoOrNull(job.completedAt),
  failureType: job.error?.type ?? null
})

export const adminJobView = (job: Job) => {
  const { error, output, outputs } = jobView(job)
  return {
    ...adminJobListItem(job),
    requestId: job.requestId,
    input: job.input,
    webhookUrl: job.webhookUrl,
    output,
    outputs,
    error,
    estimatedCompletionTime: iso(job.estimatedCompletionAt),
    providerProgress: job.providerProgress ?? null,
    // Jobs of releases before provider_route carry their route on the handle only.
    route: routeView(job.providerRoute ?? job.providerHandle?.route)
  }
}

/** The stored route of a job's generation: which of its version's routes, the provider, the credential's id (never its secret). */
const routeView = (route: ProviderRouteRef | undefined) =>
  route === undefined ? null : { index: route.index, providerId: route.providerId, credentialId: route.credentialId ?? null }

export const adminDeliveryView = (delivery: WebhookDelivery) => ({ ...deliveryView(delivery), accountId: delivery.accountId })

export const auditEntryView = (entry: AuditEntry) => ({ ...entry, createdAt: iso(entry.createdAt) })

/** A provider credential's circuit as GET /admin/providers/health shows it. */
export const providerHealthView = (entry: CredentialHealth) => ({
  providerId: entry.providerId,
  credentialId: entry.credentialId,
  state: entry.circuit.state,
  consecutiveFailures: entry.circuit.failures,
  openedAt: entry.circuit.state === "closed" ? null : iso(entry.circuit.openedAt),
  inFlight: entry.inFlight
})
