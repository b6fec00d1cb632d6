import { Cause, Effect, Exit, ManagedRuntime } from "effect"
import type { CatalogDocument } from "../../src/domain/catalog.js"
import type { EngineContext } from "../../src/engine.js"
import type { EngineFetch } from "../../src/http/webHandler.js"
import type { AccountOptions, ListQuery, SubmitOptions, TestAccount } from "./account.js"
import type { Reply, RequestOptions } from "./client.js"
import type { FakeProvider } from "./FakeProvider.js"
import type { SentWebhook } from "./RecordingWebhookSender.js"
import { TestEngine, type TestEngineOptions } from "./TestEngine.js"

type Answer<T extends (...args: any) => Effect.Effect<any, any>> = Promise<Effect.Success<ReturnType<T>>>

/** `TestAccount` with Promises: a failed helper rejects with `ApiError` (`status`, `code`, `message`, `body`). */
export interface AsyncTestAccount {
  readonly accountId: string
  readonly keyId: string
  readonly key: string
  readonly webhookSecret: string
  readonly submit: (model: string, input?: Record<string, unknown>, options?: SubmitOptions) => Answer<TestAccount["submit"]>
  readonly get: (jobId: string) => Answer<TestAccount["get"]>
  readonly cancel: (jobId: string) => Answer<TestAccount["cancel"]>
  readonly list: (query?: ListQuery) => Answer<TestAccount["list"]>
  /** The balance in catalog credits. */
  readonly balance: () => Promise<number>
  readonly request: (method: string, path: string, options?: Omit<RequestOptions, "key">) => Promise<Reply>
  readonly from: (address: string) => AsyncTestAccount
}

/** `TestEngineService` with Promises, and `dispose`. */
export interface AsyncTestEngine {
  readonly fetch: EngineFetch
  readonly origin: string
  readonly admin: string
  readonly request: (method: string, path: string, options?: RequestOptions) => Promise<Reply>
  readonly account: (options?: AccountOptions) => Promise<AsyncTestAccount>
  readonly runNextJob: () => Promise<boolean>
  readonly runJobs: () => Promise<number>
  readonly provider: FakeProvider
  readonly webhooks: {
    readonly sent: () => Promise<ReadonlyArray<SentWebhook>>
    readonly respondWith: (statusCode: number) => void
  }
  readonly catalog: (document: typeof CatalogDocument.Encoded) => Promise<void>
  /** Runs an effect against the engine's services (Jobs, Admin, Catalog, ...). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, EngineContext>) => Promise<A>
  readonly dispose: () => Promise<void>
}

/**
 * The test engine for tests without Effect: memory stores and files, the fake provider, jobs run
 * when the test calls `runJobs`. Time is the real clock; use `TestEngine.layer` for TestClock.
 */
export const makeTestEngine = async (options: TestEngineOptions = {}): Promise<AsyncTestEngine> => {
  const runtime = ManagedRuntime.make(TestEngine.layer(options))
  // Rejects with the failure itself (an ApiError), not Effect's wrapper, so tests can match its fields.
  const run = <A, E>(effect: Effect.Effect<A, E, EngineContext | TestEngine>): Promise<A> =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))))
  const engine = await run(TestEngine)
  const asAccount = (account: TestAccount): AsyncTestAccount => ({
    accountId: account.accountId,
    keyId: account.keyId,
    key: account.key,
    webhookSecret: account.webhookSecret,
    submit: (...args) => run(account.submit(...args)),
    get: (jobId) => run(account.get(jobId)),
    cancel: (jobId) => run(account.cancel(jobId)),
    list: (query) => run(account.list(query)),
    balance: () => run(account.balance),
    request: (...args) => run(account.request(...args)),
    from: (address) => asAccount(account.from(address))
  })
  return {
    fetch: engine.fetch,
    origin: engine.origin,
    admin: engine.admin,
    request: (...args) => run(engine.request(...args)),
    account: (accountOptions) => run(engine.account(accountOptions)).then(asAccount),
    runNextJob: () => run(engine.runNextJob),
    runJobs: () => run(engine.runJobs),
    provider: engine.provider,
    webhooks: { sent: () => run(engine.webhooks.sent), respondWith: engine.webhooks.respondWith },
    catalog: (document) => run(engine.catalog(document)),
    run,
    dispose: () => runtime.dispose()
  }
}
