import { type CatalogDocument, type CatalogModel, type ModelVersion, providerIdsOf, type VersionStatus } from "./catalog.js"

/**
 * What a catalog serves in this engine, as pure functions of the stored document, the time and
 * the providers this engine registered: a version past its `sunsetAt`, or none of whose
 * providers is registered here, is served as disabled (the spec's "temporarily unavailable"):
 * left out of the lists and refused with MODEL_NOT_FOUND before anything is charged.
 */
export type IsRegistered = (providerId: string) => boolean

const isPastSunset = (version: ModelVersion, now: number): boolean =>
  version.sunsetAt !== undefined && Date.parse(version.sunsetAt) <= now

/** Served on request as the document says: active or deprecated, and not past its sunset. */
const isLive = (version: ModelVersion, now: number): boolean =>
  (version.status === "active" || version.status === "deprecated") && !isPastSunset(version, now)

/** The version's provider ids when none of them is registered here (it cannot run), else none. */
const missingProvidersOf = (model: CatalogModel, version: ModelVersion, isRegistered: IsRegistered) => {
  const ids = providerIdsOf(model, version)
  const missing = ids.filter((id) => !isRegistered(id))
  return missing.length === ids.length ? missing : []
}

export const servedStatus = (model: CatalogModel, version: ModelVersion, now: number, isRegistered: IsRegistered): VersionStatus =>
  version.status === "deleted" || version.status === "disabled" || isLive(version, now) && missingProvidersOf(model, version, isRegistered).length === 0
    ? version.status
    : "disabled"

/** The model with each version's served status; the same object when nothing changes. */
export const servedModel = (model: CatalogModel, now: number, isRegistered: IsRegistered): CatalogModel => {
  const versions = model.versions.map((version) => {
    const status = servedStatus(model, version, now, isRegistered)
    return status === version.status ? version : { ...version, status }
  })
  return versions.every((version, i) => version === model.versions[i]) ? model : { ...model, versions }
}

export const servedCatalog = (doc: CatalogDocument, now: number, isRegistered: IsRegistered): CatalogDocument => ({
  ...doc,
  models: doc.models.map((model) => servedModel(model, now, isRegistered))
})

/** How many versions have passed their sunset by `now`: the served catalog changes only when this does. */
export const sunsetsPassed = (doc: CatalogDocument, now: number): number =>
  doc.models.reduce((n, model) => n + model.versions.filter((version) => isPastSunset(version, now)).length, 0)

export interface UnregisteredVersion {
  readonly model: string
  readonly version: string
  /** The provider ids the version names, none of them registered in this engine. */
  readonly providers: ReadonlyArray<string>
}

/**
 * The versions a request could reach (not deleted, disabled or past their sunset) that cannot
 * run in this engine: every provider they name is unregistered.
 */
export const unregisteredVersions = (doc: CatalogDocument, now: number, isRegistered: IsRegistered): ReadonlyArray<UnregisteredVersion> =>
  doc.models.flatMap((model) =>
    model.versions.flatMap((version) => {
      const providers = isLive(version, now) ? missingProvidersOf(model, version, isRegistered) : []
      return providers.length === 0 ? [] : [{ model: model.slug, version: version.versionId, providers }]
    })
  )

/** One line per such version, for a refusal's reasons and the bundled server's start report. */
export const unregisteredLine = ({ model, providers, version }: UnregisteredVersion): string =>
  `model "${model}" version "${version}": no registered provider (${providers.map((p) => `"${p}"`).join(", ")})`
