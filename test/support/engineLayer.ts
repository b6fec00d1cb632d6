import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerLocalSignals } from "../../adapters/memory/LocalJobSignal.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { EngineServicesLive } from "../../src/engine.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { type GenerationProvider, layerProviders } from "../../src/ports/Provider.js"
import { Admin } from "../../src/services/Admin.js"
import { Auth } from "../../src/services/Auth.js"
import { Catalog } from "../../src/services/Catalog.js"
import type { UploadSigningSecret } from "../../src/services/Uploads.js"
import type { BlobStore } from "../../src/ports/BlobStore.js"
import type { UploadTarget } from "../../src/ports/UploadTarget.js"
import { EngineConfig, type EngineSettings } from "../../src/services/EngineConfig.js"
import { makeLogger } from "../../src/observability/logger.js"
import { demoCatalog } from "./demoCatalog.js"

const jsonLines = makeLogger("json")
const warningsAsJson = Logger.make<unknown, void>((options) => {
  if (LogLevel.isGreaterThanOrEqualTo(options.logLevel, "Warn")) jsonLines.log(options)
})

/**
 * The engine's log lines during tests: warnings and worse, one JSON line each (a cause included),
 * in place of Effect's default logger, which writes every info line over several. Only the default
 * logger goes, and the minimum level stays: a test recording lines with its own logger gets them all.
 */
export const quietLogs = Layer.effect(
  Logger.CurrentLoggers,
  Effect.map(Logger.CurrentLoggers, (current) => {
    const loggers = new Set(current)
    loggers.delete(Logger.defaultLogger)
    return loggers.add(warningsAsJson)
  })
)

const memoryFiles = Layer.merge(
  layerMemoryBlobStore("http://files.test/files"),
  layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "test-upload-secret" })
)

/** The memory stores with their JobRepo's claims (`claimBatch`) replaced by `claimBatch(the store's)`: a test watches or holds them. */
export const memoryStoresClaiming = (claimBatch: (inner: JobRepo["Service"]["claimBatch"]) => JobRepo["Service"]["claimBatch"]) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Success<typeof layerMemoryStores>>()
    const repo = Context.get(context, JobRepo)
    return Context.add(context, JobRepo, { ...repo, claimBatch: claimBatch(repo.claimBatch) })
  })).pipe(Layer.provide(layerMemoryStores))

/**
 * The engine's services over the given stores, with the given provider as provider `demo`;
 * files in memory behind signed upload URLs unless `files` says otherwise; output URLs fetched
 * with `fetch` unless `http` says otherwise.
 */
export const engineOver = <E, F = never>(
  stores: Layer.Layer<Layer.Success<typeof layerMemoryStores>, E>,
  provider: GenerationProvider,
  settings: Partial<EngineSettings> = {},
  files: Layer.Layer<BlobStore | UploadTarget | UploadSigningSecret, F> = memoryFiles,
  http: Layer.Layer<HttpClient.HttpClient> = FetchHttpClient.layer
) =>
  EngineServicesLive.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        stores,
        layerLocalSignals,
        files,
        layerProviders({ demo: provider }),
        http,
        EngineConfig.layer(settings),
        quietLogs
      )
    )
  )

export const memoryEngine = (
  provider: GenerationProvider,
  settings: Partial<EngineSettings> = {},
  http: Layer.Layer<HttpClient.HttpClient> = FetchHttpClient.layer
) => engineOver(layerMemoryStores, provider, settings, memoryFiles, http)

/** Loads the demo catalog and returns a caller with `credits` micro-cents. */
export const demoCaller = (credits = 1_000_000, maxConcurrentJobs = 10) =>
  Effect.gen(function*() {
    yield* (yield* Catalog).replace(demoCatalog())
    const admin = yield* Admin
    const account = yield* admin.createAccount({
      name: "t",
      creditsMicroCents: credits,
      maxConcurrentJobs,
      segments: [],
      allowedModels: [],
      discounts: []
    })
    const key = yield* admin.createKey(account.id, { name: "k", scopes: [], allowedIPs: [], expiresAt: null })
    return yield* (yield* Auth).authenticate({ authorization: `Bearer ${key.secret}` })
  })
