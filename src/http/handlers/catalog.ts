import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type CatalogDocument, ModelNotFound } from "../../domain/catalog.js"
import {
  capabilityGroups,
  catalogCategories,
  catalogDetail,
  catalogListItem,
  catalogProvider,
  catalogProviders,
  modelDetail,
  modelList,
  providerList,
  providerModels,
  type Viewer,
  visibleModels
} from "../../domain/catalogViews.js"
import { NotFound } from "../../domain/errors.js"
import { requireScope } from "../../services/Auth.js"
import { Catalog } from "../../services/Catalog.js"
import { EngineApi } from "../Api.js"
import { CurrentCaller, CurrentViewer } from "../middleware.js"
import { CACHE_SECONDS, makeResponseCache } from "../responseCache.js"

/** A view that may be missing: 404 in the envelope (`missing`'s refusal), hidden and unknown answering alike. */
const found = <A, E>(value: A | undefined, missing: () => E) => value === undefined ? Effect.fail(missing()) : Effect.succeed(value)

export const CatalogHandlers = HttpApiBuilder.group(EngineApi, "catalog", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const view = <A>(f: (doc: CatalogDocument, viewer: Viewer) => A) =>
      Effect.gen(function*() {
        const viewer = yield* CurrentViewer
        const { document: doc } = yield* catalog.served
        return f(doc, { account: Option.getOrUndefined(Option.map(viewer, (c) => c.account)) })
      })
    const model = (slug: string) =>
      view((doc, viewer) => catalogDetail(doc, viewer, slug)).pipe(
        Effect.flatMap((detail) => found(detail, () => new ModelNotFound({ message: `No model "${slug}"` })))
      )
    return handlers
      .handle("models", () => view((doc, viewer) => visibleModels(doc, viewer).map((m) => catalogListItem(doc, viewer, m))))
      .handle("model", ({ params }) => model(params.slug))
      .handle("providers", () => view(catalogProviders))
      .handle("provider", ({ params }) =>
        view((doc, viewer) => catalogProvider(doc, viewer, params.id)).pipe(
          Effect.flatMap((detail) => found(detail, () => new NotFound({ message: `No provider "${params.id}"` })))
        ))
      .handle("categories", () => view(catalogCategories))
      .handle("capabilityGroups", () => view(capabilityGroups))
  }))

export const ModelsHandlers = HttpApiBuilder.group(EngineApi, "models", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const cache = yield* makeResponseCache
    /** Checks the scope, then answers from the cache keyed by revision, account and route. */
    const cached = <E = never>(route: string, f: (doc: CatalogDocument, viewer: Viewer) => unknown, missing?: () => E) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        yield* requireScope(caller, "list_models")
        const served = yield* catalog.served
        return yield* cache(
          // A sunset passing changes the answer without a new revision.
          `${caller.account.id}\u0000${served.sunsetsPassed}\u0000${route}`,
          served.revision,
          Effect.suspend(() => {
            const body = f(served.document, { account: caller.account })
            return missing === undefined || body !== undefined ? Effect.succeed(body) : Effect.fail(missing())
          }),
          `private, max-age=${CACHE_SECONDS}`
        )
      })
    const model = (slug: string) =>
      cached(`model ${slug}`, (doc, viewer) => modelDetail(doc, viewer, slug), () => new ModelNotFound({ message: `No model "${slug}"` }))
    return handlers
      .handle("list", () => cached("models", (doc, viewer) => ({ models: modelList(doc, viewer) })))
      .handle("get", ({ params }) => model(params.modelId))
      .handle("providers", () => cached("providers", (doc, viewer) => ({ providers: providerList(doc, viewer) })))
      .handle("providerModels", ({ params }) =>
        cached(
          `provider ${params.providerId}`,
          (doc, viewer) => providerModels(doc, viewer, params.providerId),
          () => new NotFound({ message: `No provider "${params.providerId}"` })
        ))
  }))
