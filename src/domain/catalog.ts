import { Effect, Schema } from "effect"
import { Refusal } from "./refusal.js"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const HexColor = Schema.String.check(Schema.isPattern(/^#[0-9a-fA-F]{3,8}$/, { message: "a hex colour such as #1a2b3c" }))
const NonEmpty = Schema.String.check(Schema.isMinLength(1))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
/** JSON numbers such as 1e400 parse as Infinity, which would be stored as null: prices are finite. */
const Finite = Schema.Finite
const NonNegativeFinite = Finite.check(Schema.isGreaterThanOrEqualTo(0))
/** A year: estimatedCompletionTime (submit time plus this) must stay a storable time. */
const MAX_ESTIMATED_SECONDS = 365 * 24 * 3600

export const VersionStatus = Schema.Literals(["active", "deprecated", "disabled", "deleted"])
export type VersionStatus = typeof VersionStatus.Type

/** Adds `creditsPerUnit` for every unit of a numeric input field (for example seconds of duration). */
export const PerUnitComponent = Schema.Struct({
  type: Schema.Literal("per_unit"),
  name: NonEmpty,
  field: NonEmpty,
  creditsPerUnit: NonNegativeFinite,
  /** Units assumed when the input leaves the field out. */
  default: NonNegativeFinite.pipe(Schema.withDecodingDefaultType(Effect.succeed(0)))
})

/** Scales the base price by the factor named for an input value (for example a resolution). */
export const MultiplierComponent = Schema.Struct({
  type: Schema.Literal("multiplier"),
  name: NonEmpty,
  field: NonEmpty,
  values: Schema.Record(Schema.String, NonNegativeFinite),
  /** The value assumed when the input leaves the field out. */
  default: Schema.optional(Schema.String)
})

export const PricingComponent = Schema.Union([PerUnitComponent, MultiplierComponent])
export type PricingComponent = typeof PricingComponent.Type

export const Pricing = Schema.Struct({
  baseCredits: NonNegativeFinite,
  unit: NonEmpty,
  components: Schema.optional(Schema.Array(PricingComponent))
})
export type Pricing = typeof Pricing.Type

export const RateLimits = Schema.Struct({
  requestsPerMinute: NonNegativeInt,
  requestsPerDay: NonNegativeInt
})
export type RateLimits = typeof RateLimits.Type

/** A field of the job's input to copy: "$.prompt". */
const INPUT_FIELD = /^\$\.(.+)$/

/**
 * How a version runs at its provider: the provider's model id, the provider's input built from
 * the job's, and a deadline. In `input`, a string "$.field" copies that field of the job's input
 * (left out when the job has none); any other value is sent as it is. Without `input` the job's
 * input is sent unchanged.
 */
export const ProviderMapping = Schema.Struct({
  model: Schema.optional(NonEmpty),
  input: Schema.optional(Schema.Record(
    NonEmpty,
    Schema.Unknown.check(
      Schema.makeFilter((value) => typeof value !== "string" || !value.startsWith("$") || INPUT_FIELD.test(value), {
        message: "a field reference of the form \"$.field\""
      })
    )
  )),
  /** Past this many seconds from the job's start the engine cancels at the provider and fails the job with a refund. */
  timeoutSeconds: Schema.optional(Finite.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(MAX_ESTIMATED_SECONDS)))
})
export type ProviderMapping = typeof ProviderMapping.Type

/** The provider's input for a job's input: `mapping.input` applied, or the job's input as it is. */
export const providerInputOf = (
  mapping: ProviderMapping | undefined,
  input: Readonly<Record<string, unknown>>
): Readonly<Record<string, unknown>> => {
  if (mapping?.input === undefined) return input
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(mapping.input)) {
    const field = typeof value === "string" ? INPUT_FIELD.exec(value)?.[1] : undefined
    if (field === undefined) out[key] = value
    else if (Object.hasOwn(input, field) && input[field] !== undefined) out[key] = input[field]
  }
  return out
}

/** The provider's model id a version runs as: its `provider.model`, else the model's slug. */
export const providerModelOf = (model: { readonly slug: string }, version: { readonly provider?: ProviderMapping | undefined }): string =>
  version.provider?.model ?? model.slug

/** A time with its offset, as JSON carries it: 2027-03-31T00:00:00Z. */
const IsoDateTime = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/, {
    message: "an ISO 8601 date-time with its offset, such as 2027-03-31T00:00:00Z"
  }),
  // Date.parse reads 2027-02-30 as March 2nd: the day must exist in its month.
  Schema.makeFilter((s) => {
    const [year, month, day] = s.slice(0, 10).split("-").map(Number) as [number, number, number]
    return Number.isFinite(Date.parse(s)) && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day
  }, { message: "a date-time that exists" })
)

/**
 * One way a version can run: the provider id, the provider's model (default the model's slug)
 * and the input mapping (as `provider.input`; default the job's input as it is). Routes are
 * tried in order; consecutive routes that all carry a `weight` share one rank, and each job
 * takes them in an order drawn by weight (see routeOrder in providerRoutes.ts).
 */
export const ProviderRoute = Schema.Struct({
  provider: NonEmpty,
  model: ProviderMapping.fields.model,
  input: ProviderMapping.fields.input,
  weight: Schema.optional(Finite.check(Schema.isGreaterThan(0)))
})
export type ProviderRoute = typeof ProviderRoute.Type

/** A route as the engine runs it: its position in the version's list, and its mapping resolved. */
export interface EffectiveRoute {
  readonly index: number
  readonly providerId: string
  /** The provider's model id. */
  readonly model: string
  readonly mapping: ProviderMapping
  readonly weight: number | undefined
}

/**
 * The routes a version runs on, in the catalog's order: its `routes`, else the one route of
 * today's catalogs (the model's `providerId` with the version's `provider` mapping).
 */
export const routesOf = (
  model: { readonly slug: string; readonly providerId: string },
  version: { readonly provider?: ProviderMapping | undefined; readonly routes?: ReadonlyArray<ProviderRoute> | undefined }
): ReadonlyArray<EffectiveRoute> =>
  version.routes === undefined
    ? [{ index: 0, providerId: model.providerId, model: providerModelOf(model, version), mapping: version.provider ?? {}, weight: undefined }]
    : version.routes.map((route, index) => ({
      index,
      providerId: route.provider,
      model: route.model ?? model.slug,
      mapping: route.input === undefined ? {} : { input: route.input },
      weight: route.weight
    }))

export const ModelVersion = Schema.Struct({
  versionId: NonEmpty,
  status: VersionStatus,
  inputSchema: JsonObject,
  outputSchema: JsonObject,
  pricing: Pricing,
  rateLimits: RateLimits,
  /** Typical run time, used for estimatedCompletionTime on submit. */
  estimatedSeconds: Finite.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(MAX_ESTIMATED_SECONDS)).pipe(
    Schema.withDecodingDefaultType(Effect.succeed(30))
  ),
  createdAt: Schema.optional(Schema.String),
  /** How the version runs at its provider (model id, input mapping, deadline). */
  provider: Schema.optional(ProviderMapping),
  /**
   * When the version goes away (ISO 8601 date-time with its offset): until then it is served
   * with Deprecation and Sunset headers, from then on as if disabled.
   */
  sunsetAt: Schema.optional(IsoDateTime),
  /** Providers to run on, in order of preference; without it, the model's `providerId` with `provider` above. */
  routes: Schema.optional(Schema.Array(ProviderRoute).check(Schema.isMinLength(1)))
})
export type ModelVersion = typeof ModelVersion.Type

/** The ids of the providers a version may run on: each of its routes' providers, once. */
export const providerIdsOf = (model: { readonly slug: string; readonly providerId: string }, version: ModelVersion): ReadonlyArray<string> => [
  ...new Set(routesOf(model, version).map((route) => route.providerId))
]

export const Visibility = Schema.Literals(["public", "segment", "private"])
export type Visibility = typeof Visibility.Type

export const CatalogModel = Schema.Struct({
  slug: Schema.String.check(
    Schema.isPattern(/^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)?$/, {
      message: "a slug of the form provider/model or provider/model/capability (lowercase)"
    })
  ),
  providerId: NonEmpty,
  name: NonEmpty,
  description: Schema.String,
  category: NonEmpty,
  capability: NonEmpty,
  tags: Schema.Array(Schema.String),
  ratings: Schema.Struct({ average: Finite, count: NonNegativeInt }),
  visibility: Visibility,
  segments: Schema.Array(Schema.String),
  currentVersion: NonEmpty,
  versions: Schema.Array(ModelVersion).check(Schema.isMinLength(1))
})
export type CatalogModel = typeof CatalogModel.Type

export const Category = Schema.Struct({ id: NonEmpty, name: NonEmpty, description: Schema.String })
export type Category = typeof Category.Type

export const Capability = Schema.Struct({
  id: NonEmpty,
  displayName: NonEmpty,
  label: NonEmpty,
  icon: Schema.String,
  color: HexColor,
  order: Finite
})
export type Capability = typeof Capability.Type

/** Far above any provider's limit; keeps the counts the stores compare with small integers. */
const LimitCount = Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(1_000_000))

export const ProviderLimit = Schema.Struct({
  /** The most generations running at once: jobs processing, in every process together. */
  maxInFlight: Schema.optional(LimitCount),
  /** The most generations started in any 60 seconds: the provider's requests per minute on creating them. */
  startsPerMinute: Schema.optional(LimitCount)
})
export type ProviderLimit = typeof ProviderLimit.Type

/**
 * A provider's limits, and tighter ones for some of its models, keyed by the provider's model
 * id (a version's `provider.model`, else the model's slug). A job must fit both.
 */
export const ProviderLimits = Schema.Struct({
  ...ProviderLimit.fields,
  models: Schema.optional(Schema.Record(NonEmpty, ProviderLimit))
})
export type ProviderLimits = typeof ProviderLimits.Type

export const Provider = Schema.Struct({
  id: NonEmpty,
  name: NonEmpty,
  description: Schema.String,
  logoUrl: Schema.String,
  website: Schema.String,
  color: HexColor,
  isActive: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(true))),
  /** How many of its generations run at once and start per minute, across every process. */
  limits: Schema.optional(ProviderLimits)
})
export type Provider = typeof Provider.Type

/** The whole catalog, as the admin API imports it and the CatalogRepo stores it. */
export const CatalogDocument = Schema.Struct({
  categories: Schema.Array(Category),
  capabilities: Schema.Array(Capability),
  providers: Schema.Array(Provider),
  models: Schema.Array(CatalogModel)
})
export type CatalogDocument = typeof CatalogDocument.Type

export const emptyCatalog: CatalogDocument = { categories: [], capabilities: [], providers: [], models: [] }

// What serving and replacing the catalog refuses.

/** No model (or version, or provider) by this name, or it is not available. */
export class ModelNotFound extends Refusal<ModelNotFound>()("ModelNotFound", { code: "MODEL_NOT_FOUND", status: 404 }) {}

/** The caller's account has no access to the model. */
export class ModelAccessDenied extends Refusal<ModelAccessDenied>()("ModelAccessDenied", { code: "MODEL_ACCESS_DENIED", status: 403 }) {}

/** The catalog changed since the revision the request names (If-Match): nothing was replaced. */
export class PreconditionFailed extends Refusal<PreconditionFailed>()("PreconditionFailed", { code: "PRECONDITION_FAILED", status: 412 }) {}
