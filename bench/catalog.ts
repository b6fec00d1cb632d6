import type { CatalogDocument } from "genjobs"
import { testCatalog } from "genjobs/testing"
import { settings } from "./lib/env.js"

/**
 * One text model with no rate limits (0 = none) at 1 credit a job, for the given provider: the
 * bench measures throughput, so a per-minute limit would turn most requests into 429s. With
 * BENCH_LIMITED_MODEL=1 a second one, `<provider>/limited`, whose provider model may have 10 in
 * flight and which no figure submits to: what a limited provider in the catalog costs the claims
 * of every other job.
 */
export const benchCatalog = (providerId: string): CatalogDocument => {
  const text = testCatalog.models.find((m) => m.category === "text")!
  const model = (slug: string) => ({
    ...text,
    slug,
    providerId,
    versions: text.versions.map((v) => ({ ...v, rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 } }))
  })
  const limited = `${providerId}/limited`
  return {
    ...testCatalog,
    providers: [{
      ...testCatalog.providers[0]!,
      id: providerId,
      name: `Bench ${providerId}`,
      ...(settings.limitedModel ? { limits: { models: { [limited]: { maxInFlight: 10 } } } } : {})
    }],
    models: [model(`${providerId}/text`), ...(settings.limitedModel ? [model(limited)] : [])]
  }
}

export const benchModel = (providerId: string) => `${providerId}/text`

/** Enough credit and concurrency that admission never refuses a bench job. */
export const BENCH_ACCOUNT = { creditsMicroCents: 1_000_000_000_000, maxConcurrentJobs: 1_000_000 } as const
