import { Duration, Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { GenerationFailed, type GeneratedOutput, type Generator } from "../../../src/ports/Generator.js"
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

const png = (bytes: Uint8Array) => ({ bytes, contentType: "image/png", extension: "png" })

const image = (prompt: string, input: Record<string, unknown>): GeneratedOutput => {
  const width = intIn(input["width"], 16, 1024, 256)
  const height = intIn(input["height"], 16, 1024, 256)
  return { type: "image", file: png(encodePng(drawScene(seedOf(prompt), width, height))), metadata: { width, height, format: "png" } }
}

const video = (prompt: string): GeneratedOutput => {
  const seed = seedOf(prompt)
  const frames = Array.from({ length: VIDEO.frames }, (_, i) => drawScene(seed, VIDEO.width, VIDEO.height, i / VIDEO.frames))
  const still = png(encodePng(frames[0]!))
  return {
    type: "video",
    file: { bytes: encodeApng(frames, VIDEO.frameDelayMs), contentType: "image/apng", extension: "png" },
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

const audio = (prompt: string, input: Record<string, unknown>): GeneratedOutput => {
  const durationSeconds = numberIn(input["duration"], 0.1, 30, 2)
  return {
    type: "audio",
    file: { bytes: encodeWav(synthTones(seedOf(prompt), durationSeconds, SAMPLE_RATE), SAMPLE_RATE), contentType: "audio/wav", extension: "wav" },
    metadata: { durationSeconds, sampleRate: SAMPLE_RATE, format: "wav" }
  }
}

const text = (prompt: string): GeneratedOutput => {
  const subject = prompt.trim() === "" ? "nothing in particular" : prompt.trim()
  const content = [
    `You asked about: ${subject}.`,
    `The demo provider wrote this without a model, so the same prompt always gets the same answer.`,
    `Its fingerprint is ${Buffer.from(seedOf(prompt)).toString("hex").slice(0, 16)}.`
  ].join("\n")
  return {
    type: "text",
    file: { bytes: new TextEncoder().encode(content), contentType: "text/plain; charset=utf-8", extension: "txt" },
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
      return yield* Effect.fail(new GenerationFailed({ message: `imageUrl must be a file uploaded to this service (${url})` }))
    }
    const response = yield* Effect.tryPromise({
      try: () => fetch(url, { redirect: "error" }),
      catch: () => new GenerationFailed({ message: `The input file ${url} could not be read` })
    })
    if (!response.ok) return yield* Effect.fail(new GenerationFailed({ message: `The input file ${url} answered ${response.status}` }))
    // Read in pieces and stop at the cap, so an oversize file is never held whole.
    const tooLarge = new GenerationFailed({ message: `The input file is larger than ${MAX_INPUT_BYTES} bytes` })
    const chunks = yield* Stream.fromReadableStream(
      () => response.body ?? new ReadableStream<Uint8Array>(),
      () => new GenerationFailed({ message: `The input file ${url} could not be read` })
    ).pipe(
      Stream.mapAccumEffect(0, (total, chunk) =>
        total + chunk.length > MAX_INPUT_BYTES ? Effect.fail(tooLarge) : Effect.succeed([total + chunk.length, chunk] as const)),
      Stream.runCollect
    )
    return new Uint8Array(Buffer.concat([...chunks]))
  })

/**
 * The bundled provider: real files made locally from the prompt (and, for image-to-X models,
 * from the bytes of `imageUrl`). `demoDelayMs` sets the processing time (on Effect's clock) and
 * `demoFail: true` fails the job, for integration tests.
 */
export const makeDemoGenerator = (options: DemoOptions = {}): Generator => ({
  generate: ({ job, model }) =>
    Effect.gen(function*() {
      const input = job.input
      const delay = numberIn(input["demoDelayMs"], 0, MAX_DELAY_MS, 0)
      if (delay > 0) yield* Effect.sleep(Duration.millis(delay))
      if (input["demoFail"] === true) {
        return yield* Effect.fail(new GenerationFailed({ message: "demoFail was set: the demo provider failed on purpose" }))
      }
      const source = typeof input["imageUrl"] === "string"
        ? createHash("sha256").update(yield* readInput(input["imageUrl"], options.inputUrlPrefixes ?? [])).digest("hex")
        : ""
      const prompt = typeof input["prompt"] === "string" ? input["prompt"] : ""
      const seedText = prompt + source
      switch (model.category) {
        case "image":
          return [image(seedText, input)]
        case "video":
          return [video(seedText)]
        case "audio":
          return [audio(prompt, input)]
        case "text":
          return [text(prompt)]
        default:
          return yield* Effect.fail(new GenerationFailed({ message: `The demo provider cannot make "${model.category}"` }))
      }
    })
})
