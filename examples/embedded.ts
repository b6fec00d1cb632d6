/**
 * The engine inside your own server: one runtime owns the stores, a web handler answers the
 * API, and background loops run the jobs, deliver the webhooks and expire the uploads.
 * docs/embedding.md walks through it; test/e2e/embedded.test.ts runs it.
 */
import { Effect, Fiber, Layer, ManagedRuntime, Redacted } from "effect"
import { layerFsBlobStore } from "../adapters/blob/FsBlobStore.js"
import { layerSignedUploadTarget } from "../adapters/blob/SignedUploadTarget.js"
import { DEMO_PROVIDER_ID, makeDemoGenerator } from "../adapters/generators/demo/DemoGenerator.js"
import { layerLocalJobSignal } from "../adapters/memory/LocalJobSignal.js"
import { layerSqlite } from "../adapters/sql/layer.js"
import { layerNodeWebhookSender } from "../adapters/webhooks/NodeWebhookSender.js"
import {
  EngineConfig,
  EngineServicesLive,
  HttpConfig,
  layerGenerators,
  makeWebHandler,
  UploadSweeper,
  WebhookDispatcher,
  Worker
} from "../src/index.js"

export interface EmbeddedOptions {
  /** Where the SQLite file and the stored files live. */
  readonly dataDir: string
  /** The URL your server answers on; upload and file URLs are built on it. */
  readonly publicUrl: string
  readonly adminToken: string
  /** Signs upload URLs: the same value in every process of the deployment. */
  readonly uploadSecret: string
}

export const makeEmbeddedEngine = async (options: EmbeddedOptions) => {
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(
      layerSqlite({ filename: `${options.dataDir}/genjobs.db` }),
      layerLocalJobSignal,
      layerFsBlobStore({ dir: `${options.dataDir}/files`, baseUrl: `${options.publicUrl}/files` }),
      layerSignedUploadTarget({ publicUrl: options.publicUrl, secret: options.uploadSecret }),
      layerGenerators({ [DEMO_PROVIDER_ID]: makeDemoGenerator() }),
      EngineConfig.layer({ creditMicroCents: 10_000 }),
      HttpConfig.layer({ adminToken: Redacted.make(options.adminToken) })
    ))
  )
  const runtime = ManagedRuntime.make(Layer.mergeAll(
    services,
    WebhookDispatcher.layer.pipe(
      Layer.provide(layerNodeWebhookSender({ allowPrivate: false })),
      Layer.provide(services)
    )
  ))
  const context = await runtime.runPromise(Effect.context<ManagedRuntime.ManagedRuntime.Context<typeof runtime>>())
  const { dispose: disposeHandler, handler } = makeWebHandler(Layer.succeedContext(context))

  // Run these in every process that should work (or only in worker processes over PostgreSQL).
  const background = runtime.runFork(Effect.scoped(Effect.gen(function*() {
    yield* (yield* Worker).start(2)
    yield* (yield* WebhookDispatcher).start(1)
    yield* (yield* UploadSweeper).start
    return yield* Effect.never
  })))

  return {
    /** `(Request) => Promise<Response>`: mount it in Hono, Next.js, Express (via a fetch adapter), Bun or Deno. */
    handler,
    /** Stops the loops (running jobs get their drain time) and closes the stores. */
    dispose: async () => {
      await runtime.runPromise(Fiber.interrupt(background))
      await disposeHandler()
      await runtime.dispose()
    }
  }
}
