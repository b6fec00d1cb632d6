import { Schema } from "effect"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const ProviderRef = Schema.Struct({ id: Schema.String, name: Schema.String, logoUrl: Schema.String })

/**
 * A slug as one path parameter, the form an OpenAPI document (and the clients generated from it)
 * can express: path parameters hold no `/`, so it is percent-encoded. The spec's own URLs, the
 * slug's slashes as they are, are routed here too (slugPaths.ts).
 */
export const CatalogSlugPath = Schema.Struct({
  slug: Schema.String.annotate({
    description: "provider/model or provider/model/capability, its `/` percent-encoded as %2F (demo%2Fimage-gen)"
  })
})
export const ModelIdPath = Schema.Struct({
  modelId: Schema.String.annotate({
    description: "The model's id (its slug, provider/model/capability), its `/` percent-encoded as %2F"
  })
})
export const ProviderIdPath = Schema.Struct({ id: Schema.String })
export const ProviderModelsPath = Schema.Struct({ providerId: Schema.String })

export const CatalogModelItem = Schema.Struct({
  slug: Schema.String,
  provider: ProviderRef,
  category: Schema.String,
  capability: Schema.String,
  pricing: JsonObject,
  tags: Schema.Array(Schema.String),
  ratings: Schema.Struct({ average: Schema.Number, count: Schema.Number })
})

export const CatalogModelDetail = Schema.Struct({
  slug: Schema.String,
  provider: ProviderRef,
  name: Schema.String,
  description: Schema.String,
  category: Schema.String,
  capability: Schema.String,
  inputSchema: JsonObject,
  pricing: JsonObject,
  /** When the served version goes away (ISO 8601); absent when it has no sunset. */
  sunsetAt: Schema.optionalKey(Schema.String),
  siblings: Schema.Array(Schema.Struct({ slug: Schema.String, capability: Schema.String }))
})

const ProviderFields = {
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  logoUrl: Schema.String,
  website: Schema.String,
  color: Schema.String
}

export const CatalogProviderItem = Schema.Struct({ ...ProviderFields, modelCount: Schema.Number })
export const CatalogProviderDetail = Schema.Struct({ ...ProviderFields, models: Schema.Array(JsonObject) })
export const CategoryItem = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  modelCount: Schema.Number
})
export const CapabilityItem = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  label: Schema.String,
  icon: Schema.String,
  color: Schema.String,
  order: Schema.Number
})

const ModelFields = {
  id: Schema.String,
  providerId: Schema.String,
  providerName: Schema.String,
  name: Schema.String,
  description: Schema.String,
  category: Schema.String,
  currentVersion: Schema.String
}

export const ModelItem = Schema.Struct({
  ...ModelFields,
  versionCount: Schema.Number,
  currentVersionPricing: Schema.NullOr(JsonObject),
  /** When the current version goes away (ISO 8601); absent when it has no sunset. */
  currentVersionSunsetAt: Schema.optionalKey(Schema.String)
})

export const ModelDetail = Schema.Struct({
  ...ModelFields,
  versions: Schema.Array(Schema.Struct({
    versionId: Schema.String,
    status: Schema.String,
    inputSchema: JsonObject,
    outputSchema: JsonObject,
    pricing: JsonObject,
    rateLimits: Schema.Struct({ requestsPerMinute: Schema.Number, requestsPerDay: Schema.Number }),
    /** When the version goes away (ISO 8601): served as disabled from then on. Absent when it has no sunset. */
    sunsetAt: Schema.optionalKey(Schema.String)
  }))
})

export const ProviderItem = Schema.Struct({ ...ProviderFields, categories: Schema.Array(Schema.String), isActive: Schema.Boolean })
export const ModelList = Schema.Struct({ models: Schema.Array(ModelItem) })
export const ProviderList = Schema.Struct({ providers: Schema.Array(ProviderItem) })
export const ProviderWithModels = Schema.Struct({ provider: ProviderItem, models: Schema.Array(ModelItem) })
