/** An engine over memory stores with the given providers, driven through its web handler, for simulator-level engine tests. */
import { Effect, Fiber, Layer, ManagedRuntime, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { expect } from "vitest"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerLocalSignals } from "../../adapters/memory/LocalJobSignal.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { EngineServicesLive } from "../../src/engine.js"
import { HttpConfig } from "../../src/http/HttpConfig.js"
import { makeWebHandler } from "../../src/http/webHandler.js"
import { type GenerationProvider, layerProviders } from "../../src/ports/Provider.js"
import { EngineConfig, type EngineSettings } from "../../src/services/EngineConfig.js"
import { Worker } from "../../src/services/Worker.js"
import { ADMIN_TOKEN, BASE } from "../support/httpEngine.js"

export { ADMIN_TOKEN }

/**
 * Starts the engine with `catalog` loaded and one account with plenty of credits. Outputs may
 * come from 127.0.0.1 (the simulators); provider retries are quick.
 */
export const startEngine = async (
  providers: Readonly<Record<string, GenerationProvider>>,
  catalog: unknown,
  settings: Partial<EngineSettings> = {}
) => {
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(
      layerMemoryStores,
      layerLocalSignals,
      layerMemoryBlobStore(`${BASE}/files`),
      layerSignedUploadTarget({ publicUrl: BASE, secret: "test-upload-secret" }),
      EngineConfig.layer({ providerRetry: { baseMs: 10, capMs: 50, maxRetries: 3 }, providerOutputAllowPrivate: true, ...settings }),
      FetchHttpClient.layer,
      HttpConfig.layer({ adminToken: Redacted.make(ADMIN_TOKEN) }),
      layerProviders(providers)
    ))
  )
  const runtime = ManagedRuntime.make(services)
  const web = makeWebHandler(Layer.succeedContext(await runtime.runPromise(Effect.context<Layer.Success<typeof services>>())))
  let key = ""
  const call = async (method: string, path: string, body?: unknown, token = key) => {
    const response = await web.fetch(new Request(`${BASE}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))
    return { status: response.status, body: await response.json() as any }
  }
  expect((await call("PUT", "/admin/catalog", catalog, ADMIN_TOKEN)).status).toBe(200)
  const account = await call("POST", "/admin/accounts", { name: "t", creditsMicroCents: 100_000_000 }, ADMIN_TOKEN)
  key = (await call("POST", `/admin/accounts/${account.body.id}/keys`, { name: "k", scopes: [], allowedIPs: [] }, ADMIN_TOKEN)).body.key
  const submit = async (model: string, input: Record<string, unknown> = { prompt: "p" }): Promise<string> => {
    const submitted = await call("POST", "/v1/jobs/submit", { model, input })
    expect(submitted.status).toBe(200)
    return submitted.body.jobId
  }
  /** One worker pass in the background: claims a job and runs it to its end. */
  const runInBackground = () => runtime.runFork(Worker.use((worker) => worker.runOnce("w")))
  return {
    call,
    submit,
    runInBackground,
    /** Claims one job and runs it to its end. */
    runOne: () => runtime.runPromise(Worker.use((worker) => worker.runOnce("w"))),
    join: <A, E>(fiber: Fiber.Fiber<A, E>) => runtime.runPromise(Fiber.join(fiber)),
    adminJob: async (jobId: string) => (await call("GET", `/admin/jobs/${jobId}`, undefined, ADMIN_TOKEN)).body,
    dispose: async () => {
      await web.dispose()
      await runtime.dispose()
    }
  }
}

export type TestEngine = Awaited<ReturnType<typeof startEngine>>
