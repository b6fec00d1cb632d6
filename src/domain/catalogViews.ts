import type { Account } from "./account.js"
import type { CatalogDocument, CatalogModel, ModelVersion, Pricing } from "./catalog.js"
import { canSee, defaultVersion } from "./catalogRules.js"
import { bestDiscount } from "./pricing.js"

/**
 * What the catalog endpoints show, as pure functions of the document and the caller. An
 * anonymous caller sees public models at list price; an account sees what its segments and
 * allowedModels open, priced with its best discount beside the list price.
 */
export interface Viewer {
  readonly account: Account | undefined
}

const round4 = (n: number) => Math.round(n * 10_000) / 10_000

export const pricingFor = (pricing: Pricing, model: CatalogModel, viewer: Viewer) => {
  const discount = viewer.account === undefined ? undefined : bestDiscount(viewer.account.discounts, model.slug)
  if (discount === undefined) return pricing
  return {
    ...pricing,
    baseCredits: round4(pricing.baseCredits * (1 - discount.percentage / 100)),
    listBaseCredits: pricing.baseCredits,
    discount: { type: discount.type, percentage: discount.percentage }
  }
}

/** Models the viewer may see that have a version to run. */
export const visibleModels = (doc: CatalogDocument, viewer: Viewer): ReadonlyArray<CatalogModel & { readonly served: ModelVersion }> =>
  doc.models.flatMap((m) => {
    const served = defaultVersion(m)
    return canSee(m, viewer.account) && served !== undefined ? [{ ...m, served }] : []
  })

const providerRef = (doc: CatalogDocument, providerId: string) => {
  const p = doc.providers.find((x) => x.id === providerId)
  return { id: providerId, name: p?.name ?? providerId, logoUrl: p?.logoUrl ?? "" }
}

type Visible = ReturnType<typeof visibleModels>[number]

export const catalogListItem = (doc: CatalogDocument, viewer: Viewer, m: Visible) => ({
  slug: m.slug,
  provider: providerRef(doc, m.providerId),
  category: m.category,
  capability: m.capability,
  pricing: pricingFor(m.served.pricing, m, viewer),
  tags: m.tags,
  ratings: m.ratings
})

/** `sunsetAt` when the version has one: the field is left out otherwise. */
const sunsetOf = (version: ModelVersion) => (version.sunsetAt === undefined ? {} : { sunsetAt: version.sunsetAt })

/** The provider/model part of a slug: variants share it. */
const baseOf = (slug: string) => slug.split("/").slice(0, 2).join("/")

/**
 * provider/model/capability names a variant; provider/model names the model's default variant
 * (the first in the document). Hidden and unknown slugs alike give undefined.
 */
export const catalogDetail = (doc: CatalogDocument, viewer: Viewer, slug: string) => {
  const visible = visibleModels(doc, viewer)
  const m = visible.find((x) => x.slug === slug) ??
    (slug.split("/").length === 2 ? visible.find((x) => baseOf(x.slug) === slug) : undefined)
  if (m === undefined) return undefined
  return {
    slug: m.slug,
    provider: providerRef(doc, m.providerId),
    name: m.name,
    description: m.description,
    category: m.category,
    capability: m.capability,
    inputSchema: m.served.inputSchema,
    pricing: pricingFor(m.served.pricing, m, viewer),
    ...sunsetOf(m.served),
    siblings: visible
      .filter((x) => x.slug !== m.slug && baseOf(x.slug) === baseOf(m.slug))
      .map((x) => ({ slug: x.slug, capability: x.capability }))
  }
}

/** The provider fields every provider view shares. */
const providerFields = (p: CatalogDocument["providers"][number]) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  logoUrl: p.logoUrl,
  website: p.website,
  color: p.color
})

export const catalogProviders = (doc: CatalogDocument, viewer: Viewer) => {
  const visible = visibleModels(doc, viewer)
  return doc.providers
    .map((p) => ({ ...providerFields(p), modelCount: visible.filter((m) => m.providerId === p.id).length }))
    .filter((p) => p.modelCount > 0)
}

export const catalogProvider = (doc: CatalogDocument, viewer: Viewer, id: string) => {
  const summary = catalogProviders(doc, viewer).find((p) => p.id === id)
  if (summary === undefined) return undefined
  const { modelCount: _count, ...provider } = summary
  return {
    ...provider,
    models: visibleModels(doc, viewer)
      .filter((m) => m.providerId === id)
      .map((m) => ({
        slug: m.slug,
        name: m.name,
        description: m.description,
        category: m.category,
        capability: m.capability,
        pricing: pricingFor(m.served.pricing, m, viewer),
        tags: m.tags
      }))
  }
}

export const catalogCategories = (doc: CatalogDocument, viewer: Viewer) => {
  const visible = visibleModels(doc, viewer)
  return doc.categories.map((c) => ({ ...c, modelCount: visible.filter((m) => m.category === c.id).length }))
}

export const capabilityGroups = (doc: CatalogDocument) => [...doc.capabilities].sort((a, b) => a.order - b.order)

/** Key-protected views (spec 2.8, 2.9): every version but deleted ones. */
const liveVersions = (m: CatalogModel) => m.versions.filter((v) => v.status !== "deleted")

const keyedModels = (doc: CatalogDocument, viewer: Viewer) =>
  doc.models.filter((m) => canSee(m, viewer.account) && liveVersions(m).length > 0)

export const modelListItem = (doc: CatalogDocument, viewer: Viewer, m: CatalogModel) => {
  const current = m.versions.find((v) => v.versionId === m.currentVersion)
  return {
    id: m.slug,
    providerId: m.providerId,
    providerName: providerRef(doc, m.providerId).name,
    name: m.name,
    description: m.description,
    category: m.category,
    currentVersion: m.currentVersion,
    versionCount: liveVersions(m).length,
    currentVersionPricing: current === undefined ? null : pricingFor(current.pricing, m, viewer),
    ...(current?.sunsetAt === undefined ? {} : { currentVersionSunsetAt: current.sunsetAt })
  }
}

export const modelList = (doc: CatalogDocument, viewer: Viewer) => keyedModels(doc, viewer).map((m) => modelListItem(doc, viewer, m))

export const modelDetail = (doc: CatalogDocument, viewer: Viewer, id: string) => {
  const m = keyedModels(doc, viewer).find((x) => x.slug === id)
  if (m === undefined) return undefined
  const { currentVersionPricing: _p, currentVersionSunsetAt: _s, versionCount: _c, ...summary } = modelListItem(doc, viewer, m)
  return {
    ...summary,
    versions: liveVersions(m).map((v) => ({
      versionId: v.versionId,
      status: v.status,
      inputSchema: v.inputSchema,
      outputSchema: v.outputSchema,
      pricing: pricingFor(v.pricing, m, viewer),
      rateLimits: v.rateLimits,
      ...sunsetOf(v)
    }))
  }
}

export const providerView = (doc: CatalogDocument, viewer: Viewer, id: string) => {
  const p = doc.providers.find((x) => x.id === id)
  if (p === undefined) return undefined
  return {
    ...providerFields(p),
    categories: [...new Set(keyedModels(doc, viewer).filter((m) => m.providerId === id).map((m) => m.category))],
    isActive: p.isActive
  }
}

export const providerList = (doc: CatalogDocument, viewer: Viewer) =>
  doc.providers.map((p) => providerView(doc, viewer, p.id)!)

export const providerModels = (doc: CatalogDocument, viewer: Viewer, id: string) => {
  const provider = providerView(doc, viewer, id)
  if (provider === undefined) return undefined
  return {
    provider,
    models: keyedModels(doc, viewer).filter((m) => m.providerId === id).map((m) => modelListItem(doc, viewer, m))
  }
}
