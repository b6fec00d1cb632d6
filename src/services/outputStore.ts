import { Effect, Option, Schema, type Scope, Stream } from "effect"
import { FetchHttpClient, HttpClient, type HttpClientError, type HttpClientResponse } from "effect/http"
import type { StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { OutputItem, OutputType } from "../domain/job.js"
import { acceptsContentType, extensionOf, mediaTypeOf } from "../domain/outputFiles.js"
import { AddressRefused, outputUrlRefusal } from "../domain/publicAddress.js"
import { BlobStore } from "../ports/BlobStore.js"
import { type OutputSource, type ProviderError, type ProviderOutput, ProviderRejected, ProviderUnreachable } from "../ports/Provider.js"
import { UploadTarget } from "../ports/UploadTarget.js"
import { EngineConfig } from "./EngineConfig.js"

/** An output the engine will not store (too large, or not of its type): the job fails, nothing of it stays stored. */
export class OutputRefused extends Schema.TaggedError<OutputRefused>()("OutputRefused", { message: Schema.String }) {}

const GENERIC = new Set(["application/octet-stream", "binary/octet-stream"])

/** A download's error status: 408, 429 and 5xx are worth another try, other statuses are not. */
const downloadRefusal = (url: string, status: number, retryAfterHeader: string | undefined): ProviderError => {
  const retryAfter = Number(retryAfterHeader)
  return new ProviderRejected({
    message: `The output ${url} answered ${status}`,
    retryable: status === 408 || status === 429 || status >= 500,
    httpStatus: status,
    ...(retryAfterHeader !== undefined && Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterMs: retryAfter * 1000 } : {})
  })
}

/** Redirects a download follows before it gives up: more is a loop or a provider misconfigured. */
const MAX_REDIRECTS = 5
const REDIRECTS = new Set([301, 302, 303, 307, 308])

/** The download's own refusal (the client's address guard), or else the provider's file host out of reach. */
const unreachable = (url: string) => (error: HttpClientError.HttpClientError): OutputRefused | ProviderUnreachable =>
  // A request's error (no response came), as the guard's refusal is.
  error.response === undefined && error.reason.cause instanceof AddressRefused
    ? new OutputRefused({ message: `The output ${url} was not fetched: ${error.reason.cause.message}` })
    : new ProviderUnreachable({ message: `The output ${url} could not be fetched` })

const sizeText = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MiB` : `${bytes} bytes`

/**
 * Streams a job's outputs into the BlobStore, never a whole file in memory: URL sources are
 * fetched with HttpClient behind the address guard (`download`), byte streams are read as they
 * come. Each file's content type must fit its output's type and its size the type's cap
 * (`outputSizeCaps`). Keys are `${jobId}-${attempt}-...`: unique to the attempt, so a superseded
 * worker never overwrites the winner's files, and still starting with the job's id, which the
 * retention sweep goes by.
 */
export const makeOutputStore = Effect.gen(function*() {
  const blobs = yield* BlobStore
  const target = yield* UploadTarget
  const http = HttpClient.withScope(yield* HttpClient.HttpClient)
  const config = yield* EngineConfig

  /**
   * GETs an output URL. Every hop passes the address guard first (its scheme, an address in it;
   * names are checked by the client as it dials them) and redirects are followed here, not by
   * the client, so none can lead past the guard. Headers (a provider's token) go to the first
   * URL's origin only.
   */
  const download = (
    url: string,
    headers: Readonly<Record<string, string>>,
    hops = 0
  ): Effect.Effect<HttpClientResponse.HttpClientResponse, OutputRefused | ProviderError, Scope.Scope> =>
    Effect.gen(function*() {
      const refusal = outputUrlRefusal(url, config.providerOutputAllowPrivate)
      if (refusal !== undefined) return yield* new OutputRefused({ message: `The output ${url} was not fetched: refused: ${refusal}` })
      const response = yield* http.get(url, { headers }).pipe(
        Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
        Effect.mapError(unreachable(url))
      )
      const location = response.headers["location"]
      if (!REDIRECTS.has(response.status) || location === undefined) return response
      if (hops >= MAX_REDIRECTS) return yield* new OutputRefused({ message: `The output ${url} redirects more than ${MAX_REDIRECTS} times` })
      const next = URL.canParse(location, url) ? new URL(location, url) : undefined
      if (next === undefined) return yield* new OutputRefused({ message: `The output ${url} redirects to something that is not a URL` })
      return yield* download(next.href, next.origin === new URL(url).origin ? headers : {}, hops + 1)
    })

  /** Stores one source under `key` (its extension added) and answers the key, its URL and content type. */
  const storeSource = (key: string, type: OutputType, source: OutputSource, declared: string | undefined, written: Array<string>) =>
    Effect.scoped(Effect.gen(function*() {
      const cap = config.outputSizeCaps[type]
      const opened = source._tag === "Bytes"
        ? { body: source.body, told: source.contentType, length: undefined }
        : yield* download(source.url, source.headers ?? {}).pipe(
          Effect.filterOrElse((response) => response.status >= 200 && response.status < 300, (response) =>
            Effect.fail(downloadRefusal(source.url, response.status, response.headers["retry-after"]))),
          Effect.map((response) => ({
            body: response.stream.pipe(Stream.mapError(() => new ProviderUnreachable({ message: `The output ${source.url} was cut off` }))),
            told: response.headers["content-type"],
            length: Number(response.headers["content-length"])
          }))
        )
      const told = opened.told === undefined || GENERIC.has(mediaTypeOf(opened.told)) ? undefined : opened.told
      const contentType = told ?? declared
      if (contentType === undefined || !acceptsContentType(type, contentType, declared)) {
        return yield* Effect.fail(new OutputRefused({ message: `A ${type} output came as ${contentType ?? "an unknown type"}` }))
      }
      const tooLarge = new OutputRefused({ message: `A ${type} output is larger than the ${sizeText(cap)} allowed` })
      if (opened.length !== undefined && Number.isFinite(opened.length) && opened.length > cap) return yield* Effect.fail(tooLarge)
      const file = `${key}.${extensionOf(contentType)}`
      // Counted while it streams: a body with no length, or a wrong one, stops at the cap.
      const capped = opened.body.pipe(
        Stream.mapAccumEffect(() => 0, (total, chunk) =>
          total + chunk.length > cap ? Effect.fail(tooLarge) : Effect.succeed([total + chunk.length, [chunk]] as const))
      )
      written.push(file)
      yield* blobs.putStream(file, contentType, capped)
      return { url: target.fileUrl(file), contentType }
    }))

  const storeOutput = (jobId: JobId, attempt: string, index: number, output: ProviderOutput, written: Array<string>) =>
    Effect.gen(function*() {
      const key = `${jobId}-${attempt}-${index}`
      const main = yield* storeSource(key, output.type, output.source, output.contentType, written)
      const still = (suffix: string, source: OutputSource | undefined) =>
        source === undefined ? Effect.succeed(Option.none<string>()) : Effect.map(
          storeSource(`${key}-${suffix}`, "image", source, undefined, written),
          (stored) => Option.some(stored.url)
        )
      const thumbnail = yield* still("thumb", output.thumbnail)
      const posterImage = yield* still("poster", output.posterImage)
      return {
        url: main.url,
        type: output.type,
        contentType: main.contentType,
        ...(Option.isSome(thumbnail) ? { thumbnail: thumbnail.value } : {}),
        ...(Option.isSome(posterImage) ? { posterImage: posterImage.value } : {}),
        ...(output.metadata === undefined ? {} : { metadata: output.metadata })
      } satisfies OutputItem
    })

  return {
    /**
     * Stores every output of an attempt; `written` collects each key as its write begins, so
     * whoever stops the attempt can remove them.
     */
    store: (
      jobId: JobId,
      attempt: string,
      outputs: ReadonlyArray<ProviderOutput>,
      written: Array<string>
    ): Effect.Effect<ReadonlyArray<OutputItem>, OutputRefused | ProviderError | StoreError> =>
      Effect.forEach(outputs, (output, index) => storeOutput(jobId, attempt, index, output, written)),
    /** Best effort: a file that stays is only unreferenced, and the retention sweep takes it. */
    remove: (keys: ReadonlyArray<string>) =>
      Effect.forEach(keys, (key) => blobs.remove(key).pipe(Effect.ignore), { discard: true })
  }
})
