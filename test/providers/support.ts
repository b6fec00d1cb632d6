/** ProviderRequest fixtures and the helpers the adapters' contract tests share. */
import { Effect, Schema, Stream } from "effect"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { guardedFetch } from "../../adapters/net/guardedHttpClient.js"
import { CatalogModel } from "../../src/domain/catalog.js"
import { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type {
  CallbackRequest,
  GenerationProvider,
  OutputSource,
  ProviderHandle,
  ProviderRequest,
  ProviderStatus
} from "../../src/ports/Provider.js"
import { demoCatalog } from "../support/demoCatalog.js"

let jobs = 0

/**
 * A provider request as the engine makes it for a new processing job of the demo catalog's first
 * model (with the category given), sent to `providerModel` with this mapped input. Each has its
 * own job id, so its own idempotency key.
 */
export const requestFor = (
  providerModel: string,
  input: Record<string, unknown>,
  options: { readonly callbackUrl?: string; readonly category?: string } = {}
): ProviderRequest => {
  const catalogModel = Schema.decodeUnknownSync(CatalogModel)(demoCatalog().models[0])
  const model = options.category === undefined ? catalogModel : { ...catalogModel, category: options.category }
  const now = Date.now()
  const job: Job = {
    id: JobId.make(`job_contract${++jobs}_${now}`),
    accountId: AccountId.make("acc_contract"),
    requestId: RequestId.make("req_contract"),
    model: model.slug,
    version: model.currentVersion,
    input,
    webhookUrl: null,
    status: "processing",
    costMicroCents: 0,
    error: null,
    outputs: null,
    createdAt: now,
    estimatedCompletionAt: now,
    startedAt: now,
    completedAt: null,
    attempts: 1,
    leaseOwner: "worker",
    leaseExpiresAt: now + 60_000,
    providerPhase: "started",
    providerHandle: null,
    providerStarts: 1,
    providerRoute: null,
    fairKey: 0
  }
  return {
    job,
    model,
    version: model.versions[0]!,
    providerModel,
    input,
    idempotencyKey: `idem-${job.id}`,
    ...(options.callbackUrl === undefined ? {} : { callbackUrl: options.callbackUrl })
  }
}

/** Polls until the generation is no longer running (every 25 ms, at most 400 times). */
export const pollUntilDone = (provider: GenerationProvider, handle: ProviderHandle, request: ProviderRequest) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      const status: ProviderStatus = yield* provider.poll(handle, request)
      if (status._tag !== "Running") return status
      yield* Effect.sleep(25)
    }
    return yield* Effect.die(new Error("the generation never finished"))
  })

/** Starts a generation and expects it accepted. */
export const started = (provider: GenerationProvider, request: ProviderRequest) =>
  Effect.flatMap(provider.start(request), (outcome) =>
    outcome._tag === "Started" ? Effect.succeed(outcome.handle) : Effect.die(new Error(`expected Started, got ${outcome._tag}`)))

/**
 * The engine's dialler for output files, opted in to private addresses: the simulators serve
 * their files from 127.0.0.1, which the engine refuses by default (PROVIDER_OUTPUT_ALLOW_PRIVATE).
 */
const simulatorFetch = guardedFetch({ allowPrivate: true })

/** An output's bytes as the engine gets them: a stream read to its end, or a URL fetched with the source's headers. */
export const bytesOf = (source: OutputSource): Effect.Effect<{ readonly contentType: string | null; readonly bytes: Buffer }, unknown> =>
  source._tag === "Bytes"
    ? Effect.map(Stream.runCollect(source.body), (chunks) => ({ contentType: source.contentType, bytes: Buffer.concat(chunks) }))
    : Effect.tryPromise(async () => {
      const response = await simulatorFetch(source.url, { headers: { ...source.headers } })
      if (!response.ok) throw new Error(`GET ${source.url}: ${response.status} ${await response.text()}`)
      return { contentType: response.headers.get("content-type"), bytes: Buffer.from(await response.arrayBuffer()) }
    })

export const textOf = (source: OutputSource) => Effect.map(bytesOf(source), ({ bytes }) => bytes.toString("utf8"))

/** For tests written with promises: the error an effect fails with; a success fails the test. */
export const failureOf = <A, E>(effect: Effect.Effect<A, E>): Promise<E> => Effect.runPromise(Effect.flip(effect))

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A server that takes callbacks as a provider sends them: headers and the raw body, as the engine's endpoint gets them. */
export const startReceiver = async () => {
  const received: Array<CallbackRequest> = []
  const waiters: Array<() => void> = []
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
      received.push({ headers, body: new Uint8Array(Buffer.concat(chunks)) })
      res.writeHead(200).end()
      waiters.splice(0).forEach((wake) => wake())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    received,
    /** The `n`th callback (1-based), once it has arrived. */
    nth: (n: number): Promise<CallbackRequest> =>
      new Promise((resolve) => {
        const check = () => (received.length >= n ? resolve(received[n - 1]!) : waiters.push(check))
        check()
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** A port nothing listens on. */
export const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
