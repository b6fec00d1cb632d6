/**
 * The engine inside an Effect 4 app's own router: the app's routes and the engine's API served by
 * one HttpRouter, the engine's services given by `layerEngine`, and the app's logger used by the
 * engine for all it logs (its tracer and ConfigProvider would flow in the same way).
 * docs/embedding.md ("Effect apps") walks through it; test/package/effectApp.test.ts installs the
 * packed package into an app on effect 4.1 and runs a job through it.
 */
// The modules, not the package's index: the index loads its Redis module, which needs `redis`.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Logger } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Admin, DEMO_PROVIDER_ID, demoCatalog, layerEngine, localFiles, makeDemoProvider } from "genjobs"
import { EngineHttpLive } from "genjobs/http"
import { memoryStore } from "genjobs/memory"
import { createServer } from "node:http"

const port = Number(process.env["PORT"] ?? 3000)
const publicUrl = `http://127.0.0.1:${port}`

/** The app's own route, beside the engine's. */
const HelloRoute = HttpRouter.add("GET", "/hello", HttpServerResponse.text("hello from the app"))

const Engine = layerEngine({
  store: memoryStore(),
  files: localFiles({ dir: process.env["FILES_DIR"] ?? "./files", publicUrl, uploadSecret: process.env["UPLOAD_SECRET"] ?? "change me" }),
  providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
  catalog: demoCatalog
})

/** An account and a key to try it with; a real app makes them in its own sign-up flow (the Admin service). */
const DemoAccount = Layer.effectDiscard(Effect.gen(function*() {
  const admin = yield* Admin
  const account = yield* admin.createAccount({
    name: "Demo",
    creditsMicroCents: 10_000_000,
    maxConcurrentJobs: 5,
    segments: [],
    allowedModels: [],
    discounts: []
  })
  const key = yield* admin.createKey(account.id, { name: "demo", scopes: [], allowedIPs: [], expiresAt: null })
  yield* Console.log(`demo key: ${key.secret}`)
}))

/** The app's logger: the engine's lines (its request log included) come out through it. */
const AppLogger = Logger.layer([
  Logger.make(({ logLevel, message }) =>
    console.log(`[app] ${logLevel} ${(Array.isArray(message) ? message : [message]).map((m) => typeof m === "string" ? m : JSON.stringify(m)).join(" ")}`)
  )
])

HttpRouter.serve(Layer.mergeAll(HelloRoute, EngineHttpLive, DemoAccount).pipe(Layer.provideMerge(Engine)), { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
  Layer.provide(AppLogger),
  Layer.launch,
  NodeRuntime.runMain
)
