import { Context, Effect, Layer } from "effect"
import type { CatalogDocument } from "../../src/domain/catalog.js"
import { composeEngine, type EngineContext } from "../../src/engine.js"
import { type EngineFetch, normalizeBasePath, webHandlerInScope } from "../../src/http/webHandler.js"
import { layerLogger, type LogLevelName } from "../../src/observability/logger.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { WebhookSender } from "../../src/ports/WebhookSender.js"
import { Catalog } from "../../src/services/Catalog.js"
import { EngineConfig, type EngineSettings } from "../../src/services/EngineConfig.js"
import { WebhookDispatcher } from "../../src/services/WebhookDispatcher.js"
import { Worker } from "../../src/services/Worker.js"
import { memoryFiles, memoryStore } from "../memory/parts.js"
import { type AccountOptions, createAccount, type TestAccount } from "./account.js"
import { TEST_PROVIDER_ID, testCatalog } from "./catalog.js"
import { type ApiError, makeRequester, type Requester, successBody, TEST_ORIGIN } from "./client.js"
import { type FakeProvider, makeFakeProvider } from "./FakeProvider.js"
import { makeRecordingWebhookSender, type RecordingWebhookSender, type SentWebhook } from "./RecordingWebhookSender.js"

export const TEST_ADMIN_TOKEN = "test-admin-token"

export interface TestEngineOptions {
  readonly settings?: Partial<EngineSettings> | undefined
  /** Replaces the test catalog; its models' providers need registering (`providers`) unless they are `test`. */
  readonly catalog?: typeof CatalogDocument.Encoded | undefined
  /** Providers besides the fake one (registered as `test`). */
  readonly providers?: Readonly<Record<string, GenerationProvider>> | undefined
  /** Worker fibers running jobs in the background. Default 0: jobs run when the test says. */
  readonly workers?: number | undefined
  /** Whether the upload sweeper runs in the background. Default false. */
  readonly uploadSweeper?: boolean | undefined
  /** The path the engine is mounted under; requests, file and upload URLs carry it. */
  readonly basePath?: string | undefined
  /**
   * The engine's log lines below this level are dropped. Default `warn`: a line per request and
   * per job would bury the test suite's own output; `info` or `debug` shows them when a test
   * needs looking into.
   */
  readonly logLevel?: LogLevelName | undefined
}

export interface TestWebhooks {
  /** Hands every delivery due now to the recorder, then answers everything recorded so far. */
  readonly sent: Effect.Effect<ReadonlyArray<SentWebhook>>
  readonly respondWith: RecordingWebhookSender["respondWith"]
}

export interface TestEngineService {
  /** The engine's web handler, mounted at `origin`. */
  readonly fetch: EngineFetch
  /** Where the engine answers, base path included: output and upload URLs start with it. */
  readonly origin: string
  /** The admin API's token. */
  readonly admin: string
  /** Any request to the engine, answered whatever its status; `key` may be the admin token. */
  readonly request: Requester
  /** An account with one API key, through the admin API. */
  readonly account: (options?: AccountOptions) => Effect.Effect<TestAccount, ApiError>
  /** Claims one runnable job and runs it to its end; false when none was runnable. */
  readonly runNextJob: Effect.Effect<boolean>
  /** Runs jobs until none is runnable; answers how many ran. A hanging job holds it until released. */
  readonly runJobs: Effect.Effect<number>
  /** The fake provider's script and the calls it received. */
  readonly provider: FakeProvider
  readonly webhooks: TestWebhooks
  /** Replaces the catalog through the admin API. */
  readonly catalog: (document: typeof CatalogDocument.Encoded) => Effect.Effect<void, ApiError>
}

const make = (options: TestEngineOptions, provider: FakeProvider, recorder: RecordingWebhookSender) =>
  Effect.gen(function*() {
    const config = yield* EngineConfig
    const worker = yield* Worker
    const dispatcher = yield* WebhookDispatcher
    const basePath = normalizeBasePath(options.basePath)
    const origin = `${TEST_ORIGIN}${basePath}`
    const fetch = yield* webHandlerInScope({ basePath })
    const request = makeRequester(fetch, origin)
    yield* (yield* Catalog).replace(options.catalog ?? testCatalog).pipe(
      Effect.catch((error) => Effect.die(new Error(`The test engine's catalog was refused: ${JSON.stringify(error)}`)))
    )
    let runs = 0
    // A worker id per run, as separate workers: a run cut off never renews another run's lease.
    const runNextJob = Effect.suspend(() => worker.runOnce(`test-worker-${++runs}`)).pipe(Effect.orDie)
    const runJobs = Effect.gen(function*() {
      let ran = 0
      while (yield* runNextJob) ran++
      return ran
    })
    const sent = Effect.suspend(() => dispatcher.deliverOnce("test-webhooks")).pipe(
      Effect.repeat({ while: (delivered) => delivered }),
      Effect.orDie,
      Effect.map(() => [...recorder.sent])
    )
    return {
      fetch,
      origin,
      admin: TEST_ADMIN_TOKEN,
      request,
      account: (accountOptions = {}) => createAccount(request, TEST_ADMIN_TOKEN, config.creditMicroCents, accountOptions),
      runNextJob,
      runJobs,
      provider,
      webhooks: { sent, respondWith: recorder.respondWith },
      catalog: (document) => request("PUT", "/admin/catalog", { key: TEST_ADMIN_TOKEN, body: document }).pipe(Effect.flatMap(successBody), Effect.asVoid)
    } satisfies TestEngineService
  })

/**
 * The engine over memory stores and files with the fake provider, for tests. Built with
 * `Effect.provide(TestEngine.layer())` inside `it.effect`, everything it does (requests, leases,
 * rate limits, key and upload expiry) runs on the test's clock, so `TestClock.adjust` moves it.
 */
export class TestEngine extends Context.Service<TestEngine, TestEngineService>()("genjobs/testing/TestEngine") {
  static readonly layer = (options: TestEngineOptions = {}): Layer.Layer<TestEngine | EngineContext> =>
    // Built fresh per use, so a layer shared by tests still gives each build its own script and
    // records; with a memo map of its own, as Effect 4 shares built layers across nested provides.
    Layer.fresh(Layer.unwrap(Effect.sync(() => {
      const provider = makeFakeProvider()
      const recorder = makeRecordingWebhookSender()
      const engine = composeEngine<never, never, never>({
        store: memoryStore(),
        files: memoryFiles({ publicUrl: `${TEST_ORIGIN}${normalizeBasePath(options.basePath)}` }),
        providers: { ...options.providers, [TEST_PROVIDER_ID]: provider.provider },
        settings: options.settings,
        http: { adminToken: TEST_ADMIN_TOKEN },
        workers: options.workers ?? 0,
        // Webhooks are delivered to the recorder on demand (`webhooks.sent`), never in the background.
        webhookDispatchers: 0,
        uploadSweeper: options.uploadSweeper ?? false,
        // Nothing is removed behind a test's back.
        retentionSweeper: false
      })
      return Layer.effect(TestEngine, make(options, provider, recorder)).pipe(
        Layer.provide(WebhookDispatcher.layer.pipe(Layer.provide(Layer.succeed(WebhookSender, recorder.sender)))),
        Layer.provideMerge(engine),
        // One line per event, as the bundled server logs; warnings and worse unless asked. Merged:
        // the logger and its level are references, which reach the test's own effects (runJobs,
        // requests) only from the layer's output.
        Layer.provideMerge(layerLogger({ level: options.logLevel ?? "warn" }))
      )
    })))

  // The service's members as effects, `yield* TestEngine.account()`, as tests written for the
  // test kit call them (Effect 3's accessors).
  static readonly fetch = TestEngine.useSync((engine) => engine.fetch)
  static readonly origin = TestEngine.useSync((engine) => engine.origin)
  static readonly admin = TestEngine.useSync((engine) => engine.admin)
  static readonly request = (...args: Parameters<Requester>) => TestEngine.use((engine) => engine.request(...args))
  static readonly account = (options?: AccountOptions) => TestEngine.use((engine) => engine.account(options))
  static readonly runNextJob = TestEngine.use((engine) => engine.runNextJob)
  static readonly runJobs = TestEngine.use((engine) => engine.runJobs)
  static readonly provider = TestEngine.useSync((engine) => engine.provider)
  static readonly webhooks = TestEngine.useSync((engine) => engine.webhooks)
  static readonly catalog = (document: typeof CatalogDocument.Encoded) => TestEngine.use((engine) => engine.catalog(document))
}
