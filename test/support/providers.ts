import { Effect, Stream } from "effect"
import type { GenerationProvider, ProviderOutput } from "../../src/ports/Provider.js"

/** A text output of `content`, as a byte stream. */
export const textOutput = (content: string): ProviderOutput => ({
  type: "text",
  source: { _tag: "Bytes", body: Stream.make(new TextEncoder().encode(content)), contentType: "text/plain" }
})

/** A provider that answers in its start, as a synchronous API does. */
export const finishing = (outputs: ReadonlyArray<ProviderOutput>): GenerationProvider => ({
  start: () => Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs } }),
  poll: () => Effect.die("a finishing provider is never polled"),
  cancel: () => Effect.void
})

/** For engines whose tests run no job: finishes with nothing. */
export const idleProvider: GenerationProvider = finishing([])
