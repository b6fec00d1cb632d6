import { Clock, Effect, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import type {
  GenerationProvider,
  OutputSource,
  ProviderHandle,
  ProviderOutput,
  ProviderRequest,
  ProviderStatus
} from "../../../src/ports/Provider.js"
import { drawScene, seedOf, synthTones } from "./draw.js"
import { encodeApng, encodePng } from "./png.js"
import { encodeWav } from "./wav.js"

export const DEMO_PROVIDER_ID = "demo"

const MAX_DELAY_MS = 10 * 60 * 1000
const SAMPLE_RATE = 22_050
const VIDEO = { width: 160, height: 120, frames: 12, frameDelayMs: 100 }

const intIn = (value: unknown, min: number, max: number, fallback: number): number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max ? value : fallback

const numberIn = (value: unknown, min: number, max: number, fallback: number): number =>
  typeof value === "number" && Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : fallback

const bytesOf = (bytes: Uint8Array, contentType: string): OutputSource => ({ _tag: "Bytes", body: Stream.make(bytes), contentType })

const png = (bytes: Uint8Array) => bytesOf(bytes, "image/png")

/** A file that failed the demo's checks: the generation ends as failed with this message. */
class DemoFailure extends Schema.TaggedError<DemoFailure>()("DemoFailure", { message: Schema.String }) {}

const image = (prompt: string, input: Readonly<Record<string, unknown>>): ProviderOutput => {
  const width = intIn(input["width"], 16, 1024, 256)
  const height = intIn(input["height"], 16, 1024, 256)
  return { type: "image", source: png(encodePng(drawScene(seedOf(prompt), width, height))), metadata: { width, height, format: "png" } }
}

const video = (prompt: string): ProviderOutput => {
  const seed = seedOf(prompt)
  const frames = Array.from({ length: VIDEO.frames }, (_, i) => drawScene(seed, VIDEO.width, VIDEO.height, i / VIDEO.frames))
  const still = png(encodePng(frames[0]!))
  return {
    type: "video",
    // An animated PNG stands for the video, so it is declared: the engine accepts it as a video output.
    source: bytesOf(encodeApng(frames, VIDEO.frameDelayMs), "image/apng"),
    contentType: "image/apng",
    thumbnail: still,
    posterImage: still,
    metadata: {
      width: VIDEO.width,
      height: VIDEO.height,
      frames: VIDEO.frames,
      format: "apng",
      durationSeconds: (VIDEO.frames * VIDEO.frameDelayMs) / 1000
    }
  }
}

const audio = (prompt: string, input: Readonly<Record<string, unknown>>): ProviderOutput => {
  const durationSeconds = numberIn(input["duration"], 0.1, 30, 2)
  return {
    type: "audio",
    source: bytesOf(encodeWav(synthTones(seedOf(prompt), durationSeconds, SAMPLE_RATE), SAMPLE_RATE), "audio/wav"),
    metadata: { durationSeconds, sampleRate: SAMPLE_RATE, format: "wav" }
  }
}

const text = (prompt: string): ProviderOutput => {
  const subject = prompt.trim() === "" ? "nothing in particular" : prompt.trim()
  const content = [
    `You asked about: ${subject}.`,
    `The demo provider wrote this without a model, so the same prompt always gets the same answer.`,
    `Its fingerprint is ${Buffer.from(seedOf(prompt)).toString("hex").slice(0, 16)}.`
  ].join("\n")
  return {
    type: "text",
    source: bytesOf(new TextEncoder().encode(content), "text/plain; charset=utf-8"),
    metadata: { format: "txt", characters: content.length }
  }
}

export interface DemoOptions {
  /**
   * URL prefixes the provider may read input files from (the engine's own file URLs): an
   * image-to-X job's `imageUrl` elsewhere fails, so jobs cannot make the server fetch arbitrary
   * addresses.
   */
  readonly inputUrlPrefixes?: ReadonlyArray<string>
}

const MAX_INPUT_BYTES = 100 * 1024 * 1024

/** Reads an input file the job names; its bytes seed the drawing, so the output depends on it. */
const readInput = (url: string, prefixes: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (!prefixes.some((p) => url.startsWith(p))) {
      return yield* Effect.fail(new DemoFailure({ message: `imageUrl must be a file uploaded to this service (${url})` }))
    }
    const response = yield* Effect.tryPromise({
      try: () => fetch(url, { redirect: "error" }),
      catch: () => new DemoFailure({ message: `The input file ${url} could not be read` })
    })
    if (!response.ok) return yield* Effect.fail(new DemoFailure({ message: `The input file ${url} answered ${response.status}` }))
    // Read in pieces and stop at the cap, so an oversize file is never held whole.
    const tooLarge = new DemoFailure({ message: `The input file is larger than ${MAX_INPUT_BYTES} bytes` })
    const chunks = yield* Stream.fromReadableStream({
      evaluate: () => response.body ?? new ReadableStream<Uint8Array>(),
      onError: () => new DemoFailure({ message: `The input file ${url} could not be read` })
    }).pipe(
      Stream.mapAccumEffect(() => 0, (total, chunk) =>
        total + chunk.length > MAX_INPUT_BYTES ? Effect.fail(tooLarge) : Effect.succeed([total + chunk.length, [chunk]] as const)),
      Stream.runCollect
    )
    return new Uint8Array(Buffer.concat([...chunks]))
  })

/** What the demo's generation makes, once it is due. */
const outputsOf = (request: ProviderRequest, options: DemoOptions): Effect.Effect<ReadonlyArray<ProviderOutput>, DemoFailure> =>
  Effect.gen(function*() {
    const input = request.input
    if (input["demoFail"] === true) return yield* Effect.fail(new DemoFailure({ message: "demoFail was set: the demo provider failed on purpose" }))
    const source = typeof input["imageUrl"] === "string"
      ? createHash("sha256").update(yield* readInput(input["imageUrl"], options.inputUrlPrefixes ?? [])).digest("hex")
      : ""
    const prompt = typeof input["prompt"] === "string" ? input["prompt"] : ""
    const seedText = prompt + source
    switch (request.model.category) {
      case "image":
        return [image(seedText, input)]
      case "video":
        return [video(seedText)]
      case "audio":
        return [audio(prompt, input)]
      case "text":
        return [text(prompt)]
      default:
        return yield* Effect.fail(new DemoFailure({ message: `The demo provider cannot make "${request.model.category}"` }))
    }
  })

/**
 * The generation's handle: when it is due (`demoDelayMs` after the job's first pickup). It
 * follows from the request alone, so `recover` finds the same generation `start` began.
 */
const handleOf = (request: ProviderRequest, now: number): ProviderHandle => {
  const delay = numberIn(request.input["demoDelayMs"], 0, MAX_DELAY_MS, 0)
  return { id: `demo_${request.job.id}`, data: { dueAt: (request.job.startedAt ?? now) + delay } }
}

/**
 * The bundled provider, with the start/poll shape of a remote one: `start` answers a handle,
 * `poll` answers Running until `demoDelayMs` (on Effect's clock) has passed, then real files
 * made locally from the prompt (and, for image-to-X models, from the bytes of `imageUrl`), or a
 * failure when `demoFail: true`, for integration tests.
 */
export const makeDemoProvider = (options: DemoOptions = {}): GenerationProvider => ({
  start: (request) => Effect.map(Clock.currentTimeMillis, (now) => ({ _tag: "Started", handle: handleOf(request, now) }) as const),
  poll: (handle, request) =>
    Effect.gen(function*() {
      const dueAt = typeof handle.data?.["dueAt"] === "number" ? handle.data["dueAt"] : 0
      const now = yield* Clock.currentTimeMillis
      if (now < dueAt) return { _tag: "Running", pollAfterMs: dueAt - now } satisfies ProviderStatus
      return yield* outputsOf(request, options).pipe(
        Effect.map((outputs): ProviderStatus => ({ _tag: "Succeeded", outputs })),
        Effect.catch((failure) => Effect.succeed<ProviderStatus>({ _tag: "Failed", message: failure.message }))
      )
    }),
  cancel: () => Effect.void,
  recover: (request) => Effect.map(Clock.currentTimeMillis, (now) => ({ _tag: "Found", handle: handleOf(request, now) }) as const)
})
