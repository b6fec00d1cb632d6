import type { CatalogDocument } from "genjobs"
import { testCatalog } from "genjobs/testing"

/**
 * One text model with no rate limits (0 = none) at 1 credit a job, for the given provider: the
 * bench measures throughput, so a per-minute limit would turn most requests into 429s.
 */
export const benchCatalog = (providerId: string): CatalogDocument => {
  const text = testCatalog.models.find((m) => m.category === "text")!
  return {
    ...testCatalog,
    providers: [{ ...testCatalog.providers[0]!, id: providerId, name: `Bench ${providerId}` }],
    models: [{
      ...text,
      slug: `${providerId}/text`,
      providerId,
      versions: text.versions.map((v) => ({ ...v, rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 } }))
    }]
  }
}

export const benchModel = (providerId: string) => `${providerId}/text`

/** Enough credit and concurrency that admission never refuses a bench job. */
export const BENCH_ACCOUNT = { creditsMicroCents: 1_000_000_000_000, maxConcurrentJobs: 1_000_000 } as const
