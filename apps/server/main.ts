import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { DEMO_PROVIDER_ID, engineOptionsFromEnv, inputUrlPrefixesOf, layerEngine, makeDemoProvider } from "genjobs"
import { EngineHttpLive } from "genjobs/http"
import { createServer } from "node:http"
import { publicUrlOf, ServerConfig, type ServerSettings } from "./config.js"
import { importCatalogFile, seedIfEmpty } from "./seed.js"

/** The bundled server: the engine from the environment, the demo provider, and a Node HTTP server. */
const appFor = (settings: ServerSettings) => {
  const publicUrl = publicUrlOf(settings)
  const engine = layerEngine(engineOptionsFromEnv(settings.engine, {
    publicUrl,
    providers: {
      [DEMO_PROVIDER_ID]: makeDemoProvider({ inputUrlPrefixes: inputUrlPrefixesOf(settings.engine, publicUrl) })
    }
  }))
  const prepare = Layer.effectDiscard(
    Effect.gen(function*() {
      if (settings.engine.webhookAllowPrivate) {
        yield* Effect.logWarning("WEBHOOK_ALLOW_PRIVATE is set: webhooks may target private addresses. Development only.")
      }
      if (Option.isSome(settings.catalogFile)) yield* importCatalogFile(settings.catalogFile.value)
      yield* seedIfEmpty
      if (Option.isNone(settings.engine.adminToken) && Option.isNone(settings.engine.adminTokens)) {
        yield* Effect.logInfo("ADMIN_TOKEN and ADMIN_TOKENS are unset: the admin API is off")
      }
      const workers = settings.engine.workerConcurrency
      yield* Effect.logInfo(workers === 0 ? "WORKER_CONCURRENCY=0: serving the API only" : `${workers} in-process workers started`)
    })
  )
  const server = HttpApiBuilder.serve().pipe(
    HttpServer.withLogAddress,
    Layer.provide(EngineHttpLive),
    Layer.provide(NodeHttpServer.layer(createServer, { port: settings.port, host: settings.host }))
  )
  return server.pipe(Layer.provide(prepare), Layer.provide(engine))
}

Effect.gen(function*() {
  const settings = yield* ServerConfig
  return yield* Layer.launch(appFor(settings))
}).pipe(NodeRuntime.runMain)
