import { Context, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerLocalSignals } from "../../adapters/memory/LocalJobSignal.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { EngineServicesLive } from "../../src/engine.js"
import { HttpConfig, type HttpOptions } from "../../src/http/HttpConfig.js"
import { makeWebHandler } from "../../src/http/webHandler.js"
import { StoreError } from "../../src/domain/errors.js"
import { type GenerationProvider, layerProviders } from "../../src/ports/Provider.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { EngineConfig, type EngineSettings } from "../../src/services/EngineConfig.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCatalog } from "./demoCatalog.js"
import { quietLogs } from "./engineLayer.js"

type StoreServices = Layer.Success<typeof layerMemoryStores>

/** A switch for a database outage: while `down`, every call of the wrapped stores (or of `only` these) fails. */
export interface Outage {
  down: boolean
  readonly only?: ReadonlyArray<Context.Key<any, any>> | undefined
}

const unreachable = () => new StoreError({ message: "database unreachable" })

/** Each operation of a repository, failing with a StoreError while the outage is on. */
const failingWhile = <A extends object>(outage: Outage, repo: A): A =>
  Object.fromEntries(Object.entries(repo).map(([name, op]) => [
    name,
    Effect.isEffect(op)
      ? Effect.suspend(() => (outage.down ? Effect.fail(unreachable()) : op))
      : typeof op === "function"
      ? (...args: Array<unknown>) => (outage.down ? Effect.fail(unreachable()) : op(...args))
      : op
  ])) as A

/** The stores with every repository behind the outage switch, as when the database goes away. */
const withOutage = <E>(stores: Layer.Layer<StoreServices, E>, outage: Outage) =>
  Layer.effectContext(Effect.gen(function*() {
    const repos: ReadonlyArray<Context.Key<any, any>> = [AccountRepo, ApiKeyRepo, JobRepo, CatalogRepo, WebhookDeliveryRepo, UploadRepo]
    let context: Context.Context<any> = yield* Effect.context<StoreServices>()
    for (const tag of outage.only ?? repos) {
      context = Context.add(context, tag, failingWhile(outage, Context.getUnsafe(context, tag) as object))
    }
    return context as Context.Context<StoreServices>
  })).pipe(Layer.provide(stores))

export const ADMIN_TOKEN = "test-admin-token"
export const BASE = "http://engine.test"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

export interface HttpEngineOptions {
  /** The stores under test; memory unless given (for example SQLite or PostgreSQL). */
  readonly stores?: Layer.Layer<StoreServices, unknown> | undefined
  /** Turned on, every store call fails, as when the database is unreachable. */
  readonly outage?: Outage | undefined
  /** Providers by id in place of the demo one (the demo catalog's models name "demo"). */
  readonly providers?: Readonly<Record<string, GenerationProvider>> | undefined
  readonly http?: Omit<HttpOptions, "adminToken"> | undefined
}

/** The engine's HTTP surface over memory stores (or the given ones), driven through its web handler. */
export const makeHttpEngine = async (settings: Partial<EngineSettings> = {}, options: HttpEngineOptions = {}) => {
  const stores = options.stores ?? layerMemoryStores
  const services = EngineServicesLive.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        options.outage === undefined ? stores : withOutage(stores, options.outage),
        layerLocalSignals,
        layerMemoryBlobStore(`${BASE}/files`),
        layerSignedUploadTarget({ publicUrl: BASE, secret: "test-upload-secret" }),
        layerProviders(options.providers ?? { demo: makeDemoProvider() }),
        FetchHttpClient.layer,
        EngineConfig.layer(settings),
        HttpConfig.layer({ ...options.http, adminToken: Redacted.make(ADMIN_TOKEN) }),
        quietLogs
      )
    )
  )
  const runtime = ManagedRuntime.make(services)
  const context = await runtime.runPromise(Effect.context<ManagedRuntime.ManagedRuntime.Services<typeof runtime>>())
  // The handler's runtime is its own: it logs as the engine's does only when told.
  const web = makeWebHandler(Layer.merge(Layer.succeedContext(context), quietLogs))

  const request = async (
    method: string,
    path: string,
    options: { readonly body?: unknown; readonly headers?: Record<string, string>; readonly rawBody?: string | Uint8Array } = {}
  ): Promise<Reply> => {
    const hasBody = options.body !== undefined || options.rawBody !== undefined
    const response = await web.fetch(
      new Request(`${BASE}${path}`, {
        method,
        headers: { ...(hasBody ? { "content-type": "application/json" } : {}), ...options.headers },
        ...(hasBody ? { body: (options.rawBody ?? JSON.stringify(options.body)) as BodyInit } : {})
      })
    )
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json")
    return { status: response.status, headers: response.headers, body: isJson && text !== "" ? JSON.parse(text) : text }
  }

  const admin = (method: string, path: string, body?: unknown) =>
    request(method, path, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

  const withKey = (key: string) => ({
    get: (path: string, headers: Record<string, string> = {}) =>
      request("GET", path, { headers: { authorization: `Bearer ${key}`, ...headers } }),
    post: (path: string, body?: unknown, headers: Record<string, string> = {}) =>
      request("POST", path, { body, headers: { authorization: `Bearer ${key}`, ...headers } })
  })

  /** An account with credits and one key; returns the key's secret. */
  const account = async (
    options: { readonly credits?: number; readonly scopes?: Array<string>; readonly allowedIPs?: Array<string> } & Record<
      string,
      unknown
    > = {}
  ) => {
    const { allowedIPs, credits, scopes, ...rest } = options
    const created = await admin("POST", "/admin/accounts", { name: "test", creditsMicroCents: credits ?? 10_000_000, ...rest })
    if (created.status !== 201) throw new Error(`account: ${JSON.stringify(created.body)}`)
    const key = await admin("POST", `/admin/accounts/${created.body.id}/keys`, {
      name: "k",
      scopes: scopes ?? [],
      allowedIPs: allowedIPs ?? []
    })
    if (key.status !== 201) throw new Error(`key: ${JSON.stringify(key.body)}`)
    return { accountId: created.body.id as string, keyId: key.body.id as string, key: key.body.key as string, ...withKey(key.body.key) }
  }

  const loaded = await admin("PUT", "/admin/catalog", demoCatalog())
  if (loaded.status !== 200) throw new Error(`catalog: ${JSON.stringify(loaded.body)}`)

  return {
    request,
    /** The raw web handler, for answers read as bytes. */
    handler: web.fetch,
    admin,
    account,
    withKey,
    runtime,
    /** Runs one job to its end through the real worker, as a worker process would. */
    work: (workerId = "test-worker") => runtime.runPromise(Effect.flatMap(Worker, (w) => w.runOnce(workerId))),
    dispose: async () => {
      await web.dispose()
      await runtime.dispose()
    }
  }
}

export type HttpEngine = Awaited<ReturnType<typeof makeHttpEngine>>

/**
 * Marks the only due delivery failed, as a dispatcher does after its sixth attempt; throws when
 * the due delivery is another one.
 */
export const failDelivery = (engine: HttpEngine, deliveryId: string) =>
  engine.runtime.runPromise(Effect.gen(function*() {
    const repo = yield* WebhookDeliveryRepo
    const [claimed] = yield* repo.claimDue({ workerId: "d", now: Date.now() + 1_000, leaseMs: 60_000, maxPerAccount: 4, limit: 1 })
    if (claimed?.id !== deliveryId) {
      return yield* Effect.die(new Error(`expected ${deliveryId} due, found ${claimed?.id}`))
    }
    yield* repo.recordAttempt(deliveryId, "d", {
      attempt: 6,
      at: Date.now(),
      statusCode: 500,
      error: "HTTP 500",
      durationMs: 3,
      responseBody: "no"
    }, { status: "failed" })
  }))
