import { Chunk, Effect, Stream } from "effect"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import type { CatalogModel, ModelVersion } from "../../src/domain/catalog.js"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type {
  CallbackRequest,
  GenerationProvider,
  OutputSource,
  ProviderHandle,
  ProviderRequest,
  ProviderStatus
} from "../../src/ports/Provider.js"

let jobs = 0

/** A provider request as the engine would make it for a new job of a model of `category`. */
export const requestFor = (
  providerModel: string,
  input: Record<string, unknown>,
  options: { readonly callbackUrl?: string; readonly category?: string } = {}
): ProviderRequest => {
  const id = `job_contract${++jobs}_${Date.now()}` as JobId
  const now = Date.now()
  const job: Job = {
    id,
    accountId: "acct_contract" as AccountId,
    requestId: "req_contract" as RequestId,
    model: "contract/model",
    version: "v1",
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
    leaseOwner: "w",
    leaseExpiresAt: now + 60_000,
    providerPhase: "started",
    providerHandle: null,
    providerStarts: 1
  }
  const version: ModelVersion = {
    versionId: "v1",
    status: "active",
    inputSchema: {},
    outputSchema: {},
    pricing: { baseCredits: 1, unit: "image" },
    rateLimits: { requestsPerMinute: 100, requestsPerDay: 1000 },
    estimatedSeconds: 10
  }
  const model: CatalogModel = {
    slug: "contract/model",
    providerId: "contract",
    name: "Contract",
    description: "",
    category: options.category ?? "image",
    capability: "text-to-image",
    tags: [],
    ratings: { average: 0, count: 0 },
    visibility: "public",
    segments: [],
    currentVersion: "v1",
    versions: [version]
  }
  return {
    job,
    model,
    version,
    providerModel,
    input,
    idempotencyKey: `idem-${id}`,
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

/** An output source's bytes: a URL fetched, a stream collected. */
export const bytesOf = (source: OutputSource): Effect.Effect<Uint8Array, unknown> =>
  source._tag === "Url"
    ? Effect.promise(async () => new Uint8Array(await (await fetch(source.url, { headers: source.headers ?? {} })).arrayBuffer()))
    : Effect.map(Stream.runCollect(source.body), (chunks) => new Uint8Array(Buffer.concat(Chunk.toArray(chunks))))

export const textOf = (source: OutputSource) => Effect.map(bytesOf(source), (bytes) => new TextDecoder().decode(bytes))

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
