import type { CatalogDocument, CatalogModel } from "genjobs"
import { testCatalog } from "genjobs/testing"

/** The catalog's provider id of the Replicate adapter (REPLICATE_PROVIDER_ID). */
export const REPLICATE = "replicate"
/** A video model run as the simulator's `acme/video-gen` (a small MP4); 5 credits a job. */
export const REPLICATE_VIDEO = `${REPLICATE}/video`
/** A video model run as the simulator's `acme/large-video` (its 200 MB MP4, made as it streams). */
export const REPLICATE_LARGE_VIDEO = `${REPLICATE}/large-video`

const videoModel = (slug: string, providerModel: string): CatalogModel => {
  const video = testCatalog.models.find((m) => m.category === "video")!
  return {
    ...video,
    slug,
    providerId: REPLICATE,
    name: slug,
    versions: video.versions.map((v) => ({
      ...v,
      inputSchema: {
        type: "object",
        properties: { prompt: { type: "string" }, sim_duration_ms: { type: "integer", minimum: 0 } },
        required: ["prompt"]
      },
      rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 },
      // The simulator counts starts by prompt and takes `sim_duration_ms` as the generation's length.
      provider: { model: providerModel, input: { prompt: "$.prompt", sim_duration_ms: "$.sim_duration_ms" } }
    }))
  }
}

/** Two video models at Replicate (docs/catalog.md, provider mapping), no rate limits. */
export const replicateCatalog = (): CatalogDocument => ({
  ...testCatalog,
  providers: [{ ...testCatalog.providers[0]!, id: REPLICATE, name: "Replicate (simulated)" }],
  models: [videoModel(REPLICATE_VIDEO, "acme/video-gen"), videoModel(REPLICATE_LARGE_VIDEO, "acme/large-video")]
})
