import { Chunk, Effect, Schema, Stream } from "effect"
import { CatalogModel } from "../../src/domain/catalog.js"
import { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { OutputSource, ProviderError, ProviderRequest } from "../../src/ports/Provider.js"
import { demoCatalog } from "../support/demoCatalog.js"

/** A processing job of the demo catalog's first model, sent to `providerModel` with this mapped input. */
export const providerRequest = (providerModel: string, input: Record<string, unknown>): ProviderRequest => {
  const model = Schema.decodeUnknownSync(CatalogModel)(demoCatalog().models[0])
  const job: Job = {
    id: JobId.make("job_contract"),
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
    createdAt: 0,
    estimatedCompletionAt: 0,
    startedAt: 0,
    completedAt: null,
    attempts: 1,
    leaseOwner: "worker",
    leaseExpiresAt: 1,
    providerPhase: "started",
    providerHandle: null,
    providerStarts: 1
  }
  return { job, model, version: model.versions[0]!, providerModel, input, idempotencyKey: job.id }
}

/** An output's bytes as the engine gets them: a stream read to its end, or a URL fetched with the source's headers. */
export const bytesOf = async (source: OutputSource): Promise<{ readonly contentType: string | null; readonly bytes: Buffer }> => {
  if (source._tag === "Bytes") {
    const chunks = await Effect.runPromise(Stream.runCollect(source.body as Stream.Stream<Uint8Array, ProviderError>))
    return { contentType: source.contentType, bytes: Buffer.concat(Chunk.toArray(chunks)) }
  }
  const response = await fetch(source.url, { headers: { ...source.headers } })
  if (!response.ok) throw new Error(`GET ${source.url}: ${response.status} ${await response.text()}`)
  return { contentType: response.headers.get("content-type"), bytes: Buffer.from(await response.arrayBuffer()) }
}

/** The error an effect fails with; a success fails the test. */
export const failureOf = async <A, E>(effect: Effect.Effect<A, E>): Promise<E> =>
  Effect.runPromise(Effect.flip(effect))

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
