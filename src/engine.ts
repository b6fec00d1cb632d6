import { Effect, Layer, ManagedRuntime } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import { canonicalJson } from "./domain/canonicalJson.js"
import { HttpConfig, type HttpOptions } from "./http/HttpConfig.js"
import { makeWebHandler, type EngineFetch, type WebHandler, type WebHandlerOptions } from "./http/webHandler.js"
import type { AccountRepo } from "./ports/AccountRepo.js"
import type { AccountSettingsRepo } from "./ports/AccountSettingsRepo.js"
import type { AdminReadRepo } from "./ports/AdminReadRepo.js"
import type { AuditLog } from "./ports/AuditLog.js"
import type { AuthFailures } from "./ports/AuthFailures.js"
import type { ApiKeyRepo } from "./ports/ApiKeyRepo.js"
import type { BlobStore } from "./ports/BlobStore.js"
import type { CatalogRepo } from "./ports/CatalogRepo.js"
import type { JobEvents } from "./ports/JobEvents.js"
import type { JobRepo } from "./ports/JobRepo.js"
import { type JobQueue, QueueIsBroker } from "./ports/JobQueue.js"
import type { JobSignal } from "./ports/JobSignal.js"
import type { RetentionRepo } from "./ports/RetentionRepo.js"
import type { JobLogRepo } from "./ports/JobLogRepo.js"
import { type GenerationProvider, layerProviders } from "./ports/Provider.js"
import type { UploadRepo } from "./ports/UploadRepo.js"
import type { UploadTarget } from "./ports/UploadTarget.js"
import type { WebhookDeliveryRepo } from "./ports/WebhookDeliveryRepo.js"
import type { WebhookSender } from "./ports/WebhookSender.js"
import type { WebhookSignal } from "./ports/WebhookSignal.js"
import { currentObservability } from "./observability/inherit.js"
import { layerLogger } from "./observability/logger.js"
import { MetricsConfig, type MetricsOptions } from "./observability/metricsRoute.js"
import { layerObservedJobRepo } from "./observability/observedJobRepo.js"
import { layerObservedProviderHealth } from "./observability/observedProviderHealth.js"
import { layerObservedWebhooks } from "./observability/observedWebhooks.js"
import { layerTracedProviders } from "./observability/tracedProviders.js"
import { Accounts } from "./services/Accounts.js"
import { Admin } from "./services/Admin.js"
import { AdminReads } from "./services/AdminReads.js"
import { Auth } from "./services/Auth.js"
import { Catalog } from "./services/Catalog.js"
import { EngineConfig, type EngineSettings } from "./services/EngineConfig.js"
import { JobFollow } from "./services/JobFollow.js"
import { Changes } from "./services/Changes.js"
import { Jobs } from "./services/Jobs.js"
import { LocalWorkers } from "./services/LocalWorkers.js"
import { QueueBook } from "./services/QueueBook.js"
import { layerRunTimedJobRepo, RunTimes } from "./services/RunTimes.js"
import { layerPublishingJobRepo } from "./services/publishingJobRepo.js"
import { RetentionSweeper } from "./services/RetentionSweeper.js"
import { Uploads, type UploadSigningSecret } from "./services/Uploads.js"
import { UploadSweeper } from "./services/UploadSweeper.js"
import { WebhookDispatcher } from "./services/WebhookDispatcher.js"
import { Webhooks } from "./services/Webhooks.js"
import { ProviderHealth } from "./services/ProviderHealth.js"
import { Worker } from "./services/Worker.js"

/**
 * The engine's services over its ports. Provide stores (AccountRepo, ApiKeyRepo, JobRepo,
 * CatalogRepo, WebhookDeliveryRepo, UploadRepo, RetentionRepo, AdminReadRepo, AccountSettingsRepo,
 * AuditLog, AuthFailures, ChangeFeed), JobSignal, WebhookSignal, JobEvents, BlobStore, UploadTarget, Providers, an HttpClient
 * (to fetch providers' output files) and EngineConfig.
 * `composeEngine` does that and starts the background work.
 * The services see the JobRepo through layerPublishingJobRepo, so every status change they
 * make is hinted to the job's followers, and through layerObservedJobRepo, which logs, counts
 * and traces each change.
 */
export const EngineServicesLive = Layer.mergeAll(
  Auth.layer,
  Accounts.layer,
  Jobs.layer,
  JobFollow.layer,
  Changes.layer,
  Admin.layer,
  AdminReads.layer,
  Worker.layer,
  Webhooks.layer,
  Uploads.layer,
  UploadSweeper.layer,
  RetentionSweeper.layer
).pipe(
  // One per engine: the queue's places, from one grouped read shared by every reader.
  Layer.provideMerge(QueueBook.layer),
  Layer.provideMerge(Catalog.layer),
  // One per engine: its submits hand jobs to its own idle workers.
  Layer.provideMerge(LocalWorkers.layer),
  // One per engine: the circuits of the provider credentials its workers call.
  Layer.provideMerge(layerObservedProviderHealth.pipe(Layer.provide(ProviderHealth.layer))),
  Layer.provide(layerRunTimedJobRepo),
  Layer.provide(layerObservedJobRepo),
  Layer.provide(layerPublishingJobRepo),
  // One per engine: the run times of the jobs it saw end, fed by layerRunTimedJobRepo, read by QueueBook.
  Layer.provide(RunTimes.layer)
)

/**
 * What a store adapter provides: every repository (AuthFailures counts failed authentications
 * for the HTTP layer's guessing throttle), the signals that wake idle workers and
 * webhook dispatchers, and the hints of job status changes for the jobs' followers.
 */
export type StorePorts =
  | AccountRepo
  | ApiKeyRepo
  | JobRepo
  | CatalogRepo
  | WebhookDeliveryRepo
  | UploadRepo
  | RetentionRepo
  | JobLogRepo
  | AdminReadRepo
  | AccountSettingsRepo
  | AuditLog
  | AuthFailures
  | JobSignal
  | WebhookSignal
  | JobEvents

/** What a file adapter provides: where outputs and uploads live, and how upload URLs are made. */
export type FilePorts = BlobStore | UploadTarget | UploadSigningSecret

/** Everything a composed engine provides: services, ports and settings; the HTTP layer needs no more. */
export type EngineContext = Layer.Success<typeof EngineServicesLive> | StorePorts | FilePorts | EngineConfig | HttpConfig

/** One settings object for the whole engine. Each part is a Layer, so any of them can be swapped. */
export interface EngineParts<ES = never, EF = never, EW = never> {
  /** Stores and job signal: `memoryStore()`, `sqliteStore(...)`, `postgresStore(...)`, or your own. */
  readonly store: Layer.Layer<StorePorts, ES>
  /** Output and upload files: `localFiles(...)`, `s3Files(...)`, `memoryFiles(...)`, or your own. */
  readonly files: Layer.Layer<FilePorts, EF>
  /**
   * A queue broker that carries jobs to workers: `redisQueue(...)` (`genjobs/redis`),
   * `natsQueue(...)` (`genjobs/nats`), or your own `JobQueue`. Default: the store is the queue.
   * The store still keeps every job; see docs/queues.md.
   */
  readonly queue?: Layer.Layer<JobQueue, unknown> | undefined
  /** Generation providers by the provider id the catalog's models name (docs/providers.md). */
  readonly providers: Readonly<Record<string, GenerationProvider>>
  /**
   * The catalog document (the format of `PUT /admin/catalog`; `demoCatalog` for a try), made
   * the stored catalog at start unless the store's is the same already. An invalid one fails
   * the start with its reasons. Unset: the store's catalog as it is (empty on a new store).
   */
  readonly catalog?: unknown
  /** Fetches the output files providers answer with as URLs. Default: `FetchHttpClient.layer` (the global fetch). */
  readonly httpClient?: Layer.Layer<HttpClient.HttpClient> | undefined
  /** Sends webhooks; needed unless `webhookDispatchers` is 0. */
  readonly webhookSender?: Layer.Layer<WebhookSender, EW> | undefined
  readonly settings?: Partial<EngineSettings> | undefined
  /** The admin token (undefined turns the admin API off) and trusted proxy hops. */
  readonly http?: HttpOptions | undefined
  /** Worker fibers in this process; 0 for an API-only process. Default 2. */
  readonly workers?: number | undefined
  /**
   * Webhook attempts this process keeps in flight at once; 0 for none. Default 16. Each account
   * gets at most `settings.webhookDeliveriesPerAccount` of them, so one slow receiver cannot take them all.
   */
  readonly webhookDispatchers?: number | undefined
  /** Whether this process checks and expires uploads. Default true. */
  readonly uploadSweeper?: boolean | undefined
  /**
   * Whether this process removes what is past retention (`settings.jobRetentionMs`) and
   * idempotency records past their window. Default true; processes share the work.
   */
  readonly retentionSweeper?: boolean | undefined
  /** Who may read `/metrics`; off without a token. See docs/observability.md. */
  readonly metrics?: MetricsOptions | undefined
}

/**
 * Makes `catalog` the stored catalog, unless the store's is the same already: processes that
 * start together with one document neither bump the revision in turn nor undo each other
 * (a replace conditional on the revision read, tried again if another process replaced first).
 */
const catalogAtStart = (catalog: unknown) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const service = yield* Catalog
    const wanted = canonicalJson(yield* service.check(catalog))
    const replaceUnlessSame = Effect.flatMap(service.snapshot, (stored) =>
      canonicalJson(stored.document) === wanted ? Effect.void : Effect.asVoid(service.replace(catalog, stored.revision)))
    yield* replaceUnlessSame.pipe(
      Effect.retry({ times: 3, while: (error) => error._tag === "PreconditionFailed" })
    )
  }))

/** Attempts in flight per process: idle ones cost nothing, and with 4 per account one slow tenant leaves 12 for the rest. */
export const DEFAULT_WEBHOOK_DISPATCHERS = 16

/** The engine's work besides answering requests, started in the layer's scope and drained when it closes. */
const backgroundWork = (parts: EngineParts<unknown, unknown, unknown>) => {
  const workers = parts.workers ?? 2
  const dispatchers = parts.webhookDispatchers ?? DEFAULT_WEBHOOK_DISPATCHERS
  const loops = Layer.effectDiscard(Effect.gen(function*() {
    if (parts.uploadSweeper ?? true) yield* (yield* UploadSweeper).start
    if (parts.retentionSweeper ?? true) yield* (yield* RetentionSweeper).start
    if (workers > 0) yield* (yield* Worker).start(workers)
  }))
  if (dispatchers === 0) return loops
  if (parts.webhookSender === undefined) {
    return Layer.effectDiscard(Effect.fail(new Error("webhookDispatchers > 0 needs a webhookSender (or set webhookDispatchers: 0)")))
  }
  const delivery = Layer.effectDiscard(Effect.flatMap(WebhookDispatcher, (d) => d.start(dispatchers))).pipe(
    Layer.provide(WebhookDispatcher.layer),
    Layer.provide(layerObservedWebhooks),
    Layer.provide(parts.webhookSender)
  )
  return Layer.merge(loops, delivery)
}

/** What each required part is, for the error that names a missing one. */
const REQUIRED_PARTS = {
  store: "the stores, a Layer: memoryStore(), sqliteStore({ ... }), postgresStore({ ... }) or your own",
  files: "where output and upload files live, a Layer: memoryFiles({ ... }), localFiles({ ... }), s3Files({ ... }) or your own",
  providers: "the generation providers by the id the catalog names, an object ({} for none)"
} as const

/** The parts given as Layers when given at all: a wrong value here would otherwise fail deep inside Effect. */
const LAYER_PARTS = ["queue", "httpClient", "webhookSender"] as const

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const isProviderMap = (value: unknown): value is Record<string, unknown> => isObject(value) && !Array.isArray(value) && !Layer.isLayer(value)

/**
 * What is wrong with an engine's options, one line each; empty when nothing is. The types say
 * as much to TypeScript, but plain JavaScript (and `as any`) reaches the engine unchecked, where
 * a missing Layer failed as "Cannot read properties of undefined (reading '_op_layer')".
 */
export const engineOptionProblems = (options: unknown): ReadonlyArray<string> => {
  if (!isObject(options)) return [`the options must be an object, not ${options === null ? "null" : typeof options}`]
  const problems: Array<string> = []
  for (const [name, what] of Object.entries(REQUIRED_PARTS)) {
    const value = options[name]
    if (value === undefined || value === null) problems.push(`${name} is missing: ${what}`)
    else if (name === "providers" ? !isProviderMap(value) : !Layer.isLayer(value)) problems.push(`${name} is not ${what}`)
  }
  for (const name of LAYER_PARTS) {
    const value = options[name]
    if (value !== undefined && !Layer.isLayer(value)) problems.push(`${name}, when given, must be a Layer`)
  }
  if (isProviderMap(options["providers"])) {
    for (const [id, provider] of Object.entries(options["providers"])) {
      if (!isObject(provider)) problems.push(`providers.${id} is not a provider (makeDemoProvider(), a provider adapter, or your own)`)
    }
  }
  return problems
}

/** Throws, before any Layer is built, an Error that lists every problem of the options. */
export const checkEngineOptions = (options: unknown): void => {
  const problems = engineOptionProblems(options)
  if (problems.length > 0) {
    throw new TypeError(`genjobs: the engine's options are incomplete:\n${problems.map((p) => `  - ${p}`).join("\n")}\nSee docs/embedding.md.`)
  }
}

/**
 * The whole engine from one settings object: its services over the given parts, with workers,
 * webhook delivery and the upload and retention sweepers running for as long as the layer's scope is open.
 * Closing the scope drains them (running jobs get `drainTimeoutMs`; leases cover the rest).
 */
export const composeEngine = <ES, EF, EW>(parts: EngineParts<ES, EF, EW>): Layer.Layer<EngineContext, ES | EF | EW> => {
  checkEngineOptions(parts)
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(
      // The store leaves out what only its own queue needs (its claimers' wake-ups) when a broker is the queue.
      parts.queue === undefined ? parts.store : parts.store.pipe(Layer.provide(Layer.succeed(QueueIsBroker, true))),
      parts.files,
      parts.queue ?? Layer.empty,
      layerTracedProviders.pipe(Layer.provide(layerProviders(parts.providers))),
      parts.httpClient ?? FetchHttpClient.layer,
      EngineConfig.layer(parts.settings),
      HttpConfig.layer(parts.http),
      MetricsConfig.layer(parts.metrics)
    ))
  )
  // The catalog is in place before the background work claims its first job.
  const started = parts.catalog === undefined
    ? backgroundWork(parts as EngineParts<unknown, unknown, unknown>)
    : backgroundWork(parts as EngineParts<unknown, unknown, unknown>).pipe(Layer.provide(catalogAtStart(parts.catalog)))
  return Layer.merge(services, started.pipe(Layer.provide(services))) as Layer.Layer<
    EngineContext,
    ES | EF | EW
  >
}

/** A running engine for hosts without Effect: a web handler, a way to run effects, and shutdown. */
export interface Engine {
  /** `(Request, info?) => Promise<Response>`: hand it to a mount of the `/http` entry. */
  readonly fetch: EngineFetch
  /** Runs an effect against the engine's services (Jobs, Admin, Catalog, ...). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, EngineContext>) => Promise<A>
  readonly runtime: ManagedRuntime.ManagedRuntime<EngineContext, unknown>
  /** Stops taking work, drains the background loops and closes the stores. */
  readonly dispose: () => Promise<void>
}

export interface StartOptions extends WebHandlerOptions {
  /**
   * Layers that set how the engine logs and traces (`layerLogger`, `layerOtlpTracing` of
   * `genjobs/observability`, or Effect's Logger and Tracer layers): they apply to its
   * background work and its request handling alike. Default: the engine's logger, one line per
   * event from `info` up (JSON when stdout is not a terminal, as the bundled server logs), no export.
   */
  readonly observability?: Layer.Layer<never, unknown> | undefined
}

/** Builds the layer once and serves it: the stores open, the loops start, the handler answers. */
export const startEngine = async <E>(layer: Layer.Layer<EngineContext, E>, options: StartOptions = {}): Promise<Engine> => {
  // Merged, not only provided: on Effect 4 the loggers and tracer are References in the context,
  // which reach the effects the runtime runs (and the web handler inherits) only as its output.
  const observed = Layer.provideMerge(layer, options.observability ?? layerLogger())
  const runtime = ManagedRuntime.make(observed) as ManagedRuntime.ManagedRuntime<EngineContext, unknown>
  const context = await runtime.runPromise(Effect.context<EngineContext>())
  const inherited = await runtime.runPromise(currentObservability)
  // The web handler is built on the first request, not here: a worker process or a test's engine
  // that serves no HTTP never builds the router (about half of an engine's start: 12 of 25 ms
  // for the first in a process, 1.5 of 3 for each after it, docs/decisions.md).
  let web: WebHandler | undefined
  let disposed = false
  return {
    fetch: (request, info) => {
      if (disposed) return Promise.reject(new Error("genjobs: this engine was disposed; it answers no more requests"))
      web ??= makeWebHandler(Layer.merge(Layer.succeedContext(context), inherited), options)
      return web.fetch(request, info)
    },
    run: (effect) => runtime.runPromise(effect),
    runtime,
    dispose: async () => {
      disposed = true
      await web?.dispose()
      await runtime.dispose()
    }
  }
}
