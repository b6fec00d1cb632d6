import "../quietSqliteWarning.js"
// The modules, not the package's index: the index loads its Redis module, which needs `redis`.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Config, ConfigProvider, Deferred, Effect, Exit, Layer, Option, Redacted, Runtime, type Scope } from "effect"
import { HttpMiddleware, HttpRouter, HttpServer, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { DEMO_PROVIDER_ID, engineOptionsFromEnv, inputUrlPrefixesOf, layerEngine, makeDemoProvider, settingRefusalText } from "genjobs"
import { EngineHttpLive } from "genjobs/http"
import { layerObservability } from "genjobs/observability"
import { createServer } from "node:http"
import { publicUrlOf, seedDemoOf, ServerConfig, type ServerSettings } from "./config.js"
import { reportUnregistered } from "./catalogReport.js"
import { configuredProviders } from "./providers.js"
import { importCatalogFile, seedIfEmpty } from "./seed.js"
import { storeFailureLine } from "./storeFailure.js"

// Everything the server creates (the database and its -wal/-shm, the data and file directories,
// stored files, the upload secret) holds secrets or customers' data: readable by its owner only.
process.umask(0o077)

/** What serves a request once the engine is up (a 503 while it starts, and once it stops). */
type App = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest | Scope.Scope>

/** The reason a start failed, on one line, for stderr. */
class StartFailure {
  constructor(readonly line: string) {}
}

const listenFailure = (settings: ServerSettings, cause: unknown): StartFailure => {
  const code = (cause as { cause?: { code?: unknown } }).cause?.code
  const where = `${settings.host}:${settings.port}`
  return new StartFailure(
    code === "EADDRINUSE"
      ? `genjobs: cannot listen on ${where}: the address is already in use (set PORT or HOST to another one)`
      : code === "EACCES"
      ? `genjobs: cannot listen on ${where}: permission denied`
      : `genjobs: cannot listen on ${where}: ${String((cause as { cause?: unknown }).cause ?? cause)}`
  )
}

/**
 * Headers must arrive within HEADERS_TIMEOUT_MS. Node's own bound on a whole request (300 s) is
 * off: the engine bounds a JSON body itself (BODY_TIMEOUT_MS) and an upload by its silences
 * (UPLOAD_IDLE_TIMEOUT_MS), as a 100 MiB upload over a slow link may rightly take longer.
 */
const serverOptions = (settings: ServerSettings) => ({
  headersTimeout: settings.headersTimeoutMs,
  requestTimeout: 0,
  // How often Node looks for headers past their time: its default (30 s) would let them run 40 s.
  connectionsCheckingInterval: Math.min(1_000, settings.headersTimeoutMs)
})

/** The bundled server: the port bound first, then the engine from the environment, seeded, then served. */
const serve = (settings: ServerSettings) =>
  Effect.gen(function*() {
    // Bound before anything is created or printed: a taken port stops the start with nothing to undo.
    const listening = yield* Layer.build(NodeHttpServer.layer(() => createServer(serverOptions(settings)), { port: settings.port, host: settings.host })).pipe(
      Effect.mapError((cause) => listenFailure(settings, cause))
    )
    // Requests that arrive while the engine starts wait for it, rather than finding no handler.
    const ready = yield* Deferred.make<App>()
    // The platform's span per request is "http.server POST", as docs/observability.md lists it (Effect 4's default: "POST").
    const front = HttpServer.serve(Effect.flatMap(Deferred.await(ready), (app) => app)).pipe(
      Layer.provide(Layer.succeed(HttpMiddleware.SpanNameGenerator)((request) => `http.server ${request.method}`))
    )
    // Without an exporter the platform's span per request would be made and dropped: skip it.
    yield* Layer.build(
      settings.observability.tracing === undefined ? front.pipe(Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true))) : front
    ).pipe(Effect.provide(listening))
    // Runs before the listener closes, which waits for them: if the start fails or is stopped, those requests get a 503.
    yield* Effect.addFinalizer(() => Deferred.succeed(ready, Effect.succeed(HttpServerResponse.empty({ status: 503 }))))
    yield* Effect.addFinalizer(() => Effect.logInfo("genjobs stopped: workers drained, stores closed"))
    const publicUrl = publicUrlOf(settings)
    const real = yield* configuredProviders.pipe(Effect.mapError((error) => new StartFailure(`genjobs: provider settings: ${settingRefusalText(error)}`)))
    const engine = yield* Layer.build(layerEngine(engineOptionsFromEnv(settings.engine, {
      publicUrl,
      providers: {
        [DEMO_PROVIDER_ID]: makeDemoProvider({ inputUrlPrefixes: inputUrlPrefixesOf(settings.engine, publicUrl) }),
        ...real
      }
    }))).pipe(
      Effect.mapError((error) => {
        const line = storeFailureLine(settings, error)
        return line === undefined ? error : new StartFailure(line)
      })
    )
    yield* Effect.gen(function*() {
      if (settings.engine.webhookAllowPrivate) {
        yield* Effect.logWarning("WEBHOOK_ALLOW_PRIVATE is set: webhooks may target private addresses. Development only.")
      }
      if (settings.engine.providerOutputAllowPrivate) {
        yield* Effect.logWarning("PROVIDER_OUTPUT_ALLOW_PRIVATE is set: output downloads may reach private addresses. For simulators and private providers only.")
      }
      if (Option.isSome(settings.catalogFile)) yield* importCatalogFile(settings.catalogFile.value)
      if (seedDemoOf(settings)) yield* seedIfEmpty
      yield* reportUnregistered
    }).pipe(Effect.provide(engine))
    // provideMerge: the router's own middlewares (the request log) run with the engine's services too.
    const app = yield* HttpRouter.toHttpEffect(
      EngineHttpLive.pipe(Layer.provideMerge(Layer.merge(Layer.succeedContext(engine), HttpServer.layerServices)))
    )
    yield* Deferred.succeed(ready, app)
    const workers = settings.engine.workerConcurrency
    const adminApiOn = Option.isSome(settings.engine.adminToken) || Option.isSome(settings.engine.adminTokens)
    yield* Effect.logInfo("genjobs listening", {
      url: publicUrl,
      address: `${settings.host}:${settings.port}`,
      store: Option.isSome(settings.engine.databaseUrl) ? "postgres" : "sqlite",
      queue: Option.match(settings.engine.queueUrl, {
        onNone: () => "the store's own",
        onSome: (url) => /^([a-z]+):/.exec(Redacted.value(url))?.[1] ?? "unknown"
      }),
      ...(Option.isSome(settings.engine.databaseUrl) ? {} : { dataDir: settings.engine.dataDir }),
      files: settings.engine.blobDriver,
      demo: seedDemoOf(settings) ? "seeded on an empty store" : "off (SEED_DEMO=true seeds an empty store)",
      workers,
      providers: [DEMO_PROVIDER_ID, ...Object.keys(real)].join(", "),
      webhookDispatchers: settings.engine.webhookDispatchers,
      adminApi: adminApiOn ? "on" : "off (set ADMIN_TOKEN or ADMIN_TOKENS)",
      dashboard: !adminApiOn ? "off (needs the admin API)" : settings.engine.dashboard ? `${publicUrl}/dashboard` : "off (DASHBOARD=false)",
      metrics: Option.isSome(settings.engine.metricsToken) ? "on" : "off (set METRICS_TOKEN)",
      tracing: settings.observability.tracing?.url ?? "off"
    })
    // Runs first when a signal interrupts the server: the finalizers above then drain and close.
    yield* Effect.addFinalizer(() =>
      Effect.logInfo(workers > 0 ? "genjobs shutting down: no new requests or claims; draining running jobs" : "genjobs shutting down")
    )
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(layerObservability(settings.observability)))

/** Refusals of the store's settings, whose message says all there is to say. */
const isSettingsRefusal = (value: unknown): value is { readonly message: string } =>
  value instanceof Error && "_tag" in value && (value._tag === "SqliteDriverError" || value._tag === "TablePrefixError")

const oneLine = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure) && failure.value instanceof StartFailure) return failure.value.line
  if (Option.isSome(failure) && failure.value instanceof Config.ConfigError) return `genjobs: invalid configuration: ${settingRefusalText(failure.value)}`
  if (Option.isSome(failure) && isSettingsRefusal(failure.value)) return `genjobs: ${failure.value.message}`
  return `genjobs: the server stopped: ${Cause.pretty(cause)}`
}

/**
 * A stop by SIGTERM or SIGINT (the main fiber interrupted, its finalizers drained) exits 0, as
 * process managers expect of a clean stop; Effect 4's default teardown answers 130 for it.
 */
const stoppedBySignalIsSuccess: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

Effect.gen(function*() {
  return yield* serve(yield* ServerConfig)
}).pipe(
  // A variable set to "" is a value (a token given empty is refused, not taken for unset), as before Effect 4.
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ preserveEmptyStrings: true })),
  Effect.tapCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => console.error(oneLine(cause))))),
  (program) => NodeRuntime.runMain(program, { disableErrorReporting: true, teardown: stoppedBySignalIsSuccess })
)
