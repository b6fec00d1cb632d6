import { Option, Schema } from "effect"
import type { OutputType } from "../../../src/domain/job.js"
import type { ProviderOutput } from "../../../src/ports/Provider.js"
import { textOutput, urlOutput } from "../providerOutputs.js"
import { FalFile } from "./schema.js"

const decodeFile = Schema.decodeUnknownOption(FalFile)

/** A result field's name says what its files are when their content type does not ("video", "audio_file", "images"). */
const typeOfField = (field: string, declared: OutputType): OutputType =>
  /video/i.test(field) ? "video" : /audio/i.test(field) ? "audio" : /image/i.test(field) ? "image" : declared

/**
 * A completed request's result as outputs: every file it holds (a field that is a file
 * `{url, content_type, ...}` or a list of them), in field order; without files, its text
 * (`output` or `text`, as language models answer).
 */
export const outputsOf = (result: Readonly<Record<string, unknown>>, declared: OutputType): ReadonlyArray<ProviderOutput> => {
  const files = Object.entries(result).flatMap(([field, value]) =>
    (Array.isArray(value) ? value : [value]).flatMap((item) =>
      Option.match(decodeFile(item), {
        onNone: () => [],
        onSome: (file) => [
          urlOutput(file.url, typeOfField(field, declared), {
            contentType: file.content_type ?? undefined,
            metadata: {
              ...(typeof file.width === "number" ? { width: file.width } : {}),
              ...(typeof file.height === "number" ? { height: file.height } : {})
            }
          })
        ]
      })
    )
  )
  if (files.length > 0) return files
  const text = result["output"] ?? result["text"]
  return typeof text === "string" ? [textOutput(text)] : []
}
