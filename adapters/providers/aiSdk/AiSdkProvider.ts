import type {
  Experimental_VideoModelV4 as VideoModelV4,
  ImageModelV4,
  JSONValue,
  SpeechModelV4
} from "@ai-sdk/provider"
import { Clock, Duration, Effect } from "effect"
import {
  type GenerationProvider,
  type ProviderError,
  type ProviderHandle,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus,
  ProviderUnreachable,
  type StartOutcome
} from "../../../src/ports/Provider.js"
import { declaredOutputType } from "../providerOutputs.js"
import { imageCallOptions, providerOptionsKey, speechCallOptions, videoCallOptions } from "./callOptions.js"
import { providerErrorOf } from "./errors.js"
import { imageOutputs, speechOutput, videoOutputs } from "./outputs.js"

/**
 * A model whose optional members may also be present as `undefined`: the AI SDK's own classes
 * (its mocks, provider packages) declare them so, which `exactOptionalPropertyTypes` would refuse.
 */
export type Loose<M> = { [K in keyof M]: undefined extends M[K] ? M[K] | undefined : M[K] }

/** One model for every catalog model of the provider, or the package's factory (`replicate.image`) called with the version's provider model. */
export type ModelSource<M> = Loose<M> | ((modelId: string) => Loose<M>)

export interface AiSdkProviderOptions {
  /** The provider id the catalog's models name; also the prefix of its error messages. */
  readonly id: string
  readonly image?: ModelSource<ImageModelV4> | undefined
  readonly video?: ModelSource<VideoModelV4> | undefined
  readonly speech?: ModelSource<SpeechModelV4> | undefined
  /** Between doStatus calls of a started video. Default 2000 ms. */
  readonly pollIntervalMs?: number | undefined
  /**
   * The longest wait for one model call. A doGenerate runs the whole generation in its call,
   * so the default is long: 10 minutes.
   */
  readonly requestTimeoutMs?: number | undefined
}

const resolve = <M>(source: ModelSource<M> | undefined, modelId: string): Loose<M> | undefined =>
  typeof source === "function" ? (source as (modelId: string) => Loose<M>)(modelId) : source

/** The handle of a started video: the operation JSON as the model returned it, kept verbatim. */
const handleOf = (operation: JSONValue): ProviderHandle => ({
  id: typeof operation === "string" ? operation : JSON.stringify(operation),
  data: { operation }
})

/**
 * AI SDK models (`@ai-sdk/provider` 4) as a generation provider of the engine. A video model
 * with doStart/doStatus is a long-running generation: the operation doStart returns is the
 * job's durable handle, committed before the engine polls it with doStatus, from any process
 * after a crash. Every other call (an image, speech, a video model with doGenerate only) finishes
 * in its call. The model gets the job's idempotency key as an `Idempotency-Key` header; there is
 * no `recover` (an AI SDK model cannot be asked what it holds), so a start whose answer was lost
 * fails the job with a refund rather than start twice. Outputs go to the blob store.
 */
export const aiSdkProvider = (options: AiSdkProviderOptions): GenerationProvider => {
  const timeout = Duration.millis(options.requestTimeoutMs ?? 600_000)

  /** One model call under the timeout, its failure read as the engine reads a provider's. */
  const call = <A>(isStart: boolean, run: (signal: AbortSignal) => PromiseLike<A>): Effect.Effect<A, ProviderError> =>
    Effect.tryPromise({ try: (signal) => Promise.resolve(run(signal)), catch: (error) => error }).pipe(
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(new ProviderUnreachable({ message: `${options.id}: no answer within ${Duration.toMillis(timeout)} ms`, timedOut: true }))
      }),
      Effect.catch((error) =>
        error instanceof ProviderUnreachable
          ? Effect.fail(error)
          : Effect.flatMap(Clock.currentTimeMillis, (nowMs) => Effect.fail(providerErrorOf(options.id, error, { isStart, nowMs }))))
    )

  const missing = (kind: string, request: ProviderRequest) =>
    new ProviderRejected({ message: `${options.id} has no ${kind} model for ${request.providerModel}`, retryable: false })

  const videoOf = (request: ProviderRequest) => {
    const model = resolve(options.video, request.providerModel)
    return model === undefined ? Effect.fail(missing("video", request)) : Effect.succeed(model)
  }

  const start = Effect.fn("aiSdk.start")(function*(request: ProviderRequest) {
    const headers = { "idempotency-key": request.idempotencyKey }
    const type = declaredOutputType(request)
    if (type === "video") {
      const model = yield* videoOf(request)
      const callOptions = videoCallOptions(request.input, providerOptionsKey(model.provider), headers)
      if (model.doStart !== undefined && model.doStatus !== undefined) {
        const started = yield* call(true, (abortSignal) => model.doStart!({ ...callOptions, abortSignal }))
        return { _tag: "Started", handle: handleOf(started.operation) } satisfies StartOutcome
      }
      if (model.doGenerate === undefined) return yield* missing("video", request)
      const result = yield* call(true, (abortSignal) => model.doGenerate!({ ...callOptions, abortSignal }))
      return { _tag: "Finished", status: { _tag: "Succeeded", outputs: videoOutputs(result.videos) } } satisfies StartOutcome
    }
    if (type === "audio") {
      const model = resolve(options.speech, request.providerModel)
      if (model === undefined) return yield* missing("speech", request)
      const callOptions = speechCallOptions(request.input, providerOptionsKey(model.provider), headers)
      const result = yield* call(true, (abortSignal) => model.doGenerate({ ...callOptions, abortSignal }))
      return { _tag: "Finished", status: { _tag: "Succeeded", outputs: [speechOutput(result.audio)] } } satisfies StartOutcome
    }
    const model = resolve(options.image, request.providerModel)
    if (model === undefined) return yield* missing("image", request)
    const callOptions = imageCallOptions(request.input, providerOptionsKey(model.provider), headers)
    const result = yield* call(true, (abortSignal) => model.doGenerate({ ...callOptions, abortSignal }))
    return { _tag: "Finished", status: { _tag: "Succeeded", outputs: imageOutputs(result.images) } } satisfies StartOutcome
  })

  const poll = Effect.fn("aiSdk.poll")(function*(handle: ProviderHandle, request: ProviderRequest) {
    const model = yield* videoOf(request)
    if (model.doStatus === undefined) return yield* missing("video", request)
    if (handle.data === undefined || !("operation" in handle.data)) {
      return yield* new ProviderRejected({ message: `${options.id}: the job's handle has no operation`, retryable: false })
    }
    const operation = handle.data["operation"] as JSONValue
    const status = yield* call(false, (abortSignal) => model.doStatus!({ operation, abortSignal }))
    switch (status.status) {
      case "pending":
        return { _tag: "Running" } satisfies ProviderStatus
      case "completed":
        return { _tag: "Succeeded", outputs: videoOutputs(status.videos) } satisfies ProviderStatus
      case "error":
        return { _tag: "Failed", message: `${options.id}: ${status.error}` } satisfies ProviderStatus
    }
  })

  return {
    start,
    poll,
    // The AI SDK has no cancel: the job ends, the provider may finish its generation unread.
    cancel: () => Effect.void,
    pollIntervalMs: options.pollIntervalMs ?? 2_000
  }
}
