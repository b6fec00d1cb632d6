import type { Account } from "./account.js"
import { type CatalogDocument, type CatalogModel, type ModelVersion, routesOf } from "./catalog.js"
import { schemaCompileError } from "./jsonSchema.js"

/** Who may see and use a model (spec 4.3): segment and private models need a matching account. */
export const canSee = (model: CatalogModel, account: Account | undefined): boolean => {
  switch (model.visibility) {
    case "public":
      return true
    case "segment":
      return account !== undefined && model.segments.some((s) => account.segments.includes(s))
    case "private":
      return account !== undefined && account.allowedModels.includes(model.slug)
  }
}

/** Usable on request: active and deprecated. Disabled and deleted answer MODEL_NOT_FOUND. */
export const isUsable = (version: ModelVersion): boolean => version.status === "active" || version.status === "deprecated"

/**
 * The version a request without `version` gets: the current version when active, else the
 * newest active one (document order, last is newest), else the current one when deprecated.
 */
export const defaultVersion = (model: CatalogModel): ModelVersion | undefined => {
  const current = model.versions.find((v) => v.versionId === model.currentVersion)
  if (current?.status === "active") return current
  const newestActive = [...model.versions].reverse().find((v) => v.status === "active")
  if (newestActive !== undefined) return newestActive
  return current?.status === "deprecated" ? current : undefined
}

/**
 * A slug names a model variant exactly; provider/model alone names its first variant in the
 * document (the default capability).
 */
export const findModel = (models: ReadonlyArray<CatalogModel>, slug: string): CatalogModel | undefined =>
  models.find((m) => m.slug === slug) ??
    (slug.split("/").length === 2 ? models.find((m) => m.slug.startsWith(`${slug}/`)) : undefined)

/** Every reason a catalog document cannot be imported; empty when it can. */
export const catalogProblems = (doc: CatalogDocument): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const duplicates = (label: string, ids: ReadonlyArray<string>) => {
    const seen = new Set<string>()
    for (const id of ids) {
      if (seen.has(id)) problems.push(`duplicate ${label} "${id}"`)
      seen.add(id)
    }
    return seen
  }
  const categories = duplicates("category", doc.categories.map((c) => c.id))
  const capabilities = duplicates("capability", doc.capabilities.map((c) => c.id))
  const providers = duplicates("provider", doc.providers.map((p) => p.id))
  duplicates("model slug", doc.models.map((m) => m.slug))
  for (const model of doc.models) {
    const at = `model "${model.slug}"`
    if (!providers.has(model.providerId)) problems.push(`${at}: unknown providerId "${model.providerId}"`)
    if (!model.slug.startsWith(`${model.providerId}/`)) problems.push(`${at}: slug must start with its providerId`)
    if (!categories.has(model.category)) problems.push(`${at}: unknown category "${model.category}"`)
    if (!capabilities.has(model.capability)) problems.push(`${at}: unknown capability "${model.capability}"`)
    if (model.visibility === "segment" && model.segments.length === 0) {
      problems.push(`${at}: visibility "segment" needs at least one segment`)
    }
    const versionIds = new Set<string>()
    for (const version of model.versions) {
      if (versionIds.has(version.versionId)) problems.push(`${at}: duplicate version "${version.versionId}"`)
      versionIds.add(version.versionId)
      for (const [name, schema] of [["inputSchema", version.inputSchema], ["outputSchema", version.outputSchema]] as const) {
        const error = schemaCompileError(schema)
        if (error !== undefined) problems.push(`${at} version "${version.versionId}": ${name} is not a valid JSON Schema: ${error}`)
      }
    }
    if (!versionIds.has(model.currentVersion)) problems.push(`${at}: currentVersion "${model.currentVersion}" is not among its versions`)
  }
  // A misspelt model id would limit nothing, silently.
  for (const provider of doc.providers) {
    for (const providerModel of Object.keys(provider.limits?.models ?? {})) {
      const runs = doc.models.some((model) =>
        model.versions.some((version) =>
          routesOf(model, version).some((route) => route.providerId === provider.id && route.model === providerModel))
      )
      if (!runs) problems.push(`provider "${provider.id}": limits.models "${providerModel}" is the provider model of none of its versions`)
    }
  }
  return problems
}
