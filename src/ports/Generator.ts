import { Context, Layer, Option, Schema, type Effect } from "effect"
import type { CatalogModel, ModelVersion } from "../domain/catalog.js"
import type { Job, OutputType } from "../domain/job.js"

export interface GeneratedFile {
  readonly bytes: Uint8Array
  readonly contentType: string
  readonly extension: string
}

export interface GeneratedOutput {
  readonly type: OutputType
  readonly file: GeneratedFile
  readonly thumbnail?: GeneratedFile
  readonly posterImage?: GeneratedFile
  readonly metadata?: Record<string, unknown>
}

export interface GenerationRequest {
  readonly job: Job
  readonly model: CatalogModel
  readonly version: ModelVersion
}

/** The provider refused or could not finish: the job fails with GENERATION_FAILED. */
export class GenerationFailed extends Schema.TaggedError<GenerationFailed>()("GenerationFailed", {
  message: Schema.String
}) {}

export interface Generator {
  readonly generate: (request: GenerationRequest) => Effect.Effect<ReadonlyArray<GeneratedOutput>, GenerationFailed>
}

/** Generators by provider id. */
export class Generators extends Context.Tag("genjobs/Generators")<Generators, {
  readonly forProvider: (providerId: string) => Option.Option<Generator>
}>() {}

export const layerGenerators = (byProvider: Readonly<Record<string, Generator>>) =>
  Layer.succeed(Generators, { forProvider: (providerId) => Option.fromNullable(byProvider[providerId]) })
