import type { OutputType } from "../../../src/domain/job.js"
import type { ProviderOutput } from "../../../src/ports/Provider.js"
import { isUrl, textOutput, urlOutput } from "../providerOutputs.js"

/**
 * A succeeded prediction's `output` as outputs. Its shape is the model's: a file URL, a list
 * of file URLs, a list of strings (text models stream tokens: joined into one text), or any
 * other JSON (kept as one JSON text). `headersFor` adds headers to URLs that need them.
 */
export const outputsOf = (
  output: unknown,
  declared: OutputType,
  headersFor: (url: string) => Readonly<Record<string, string>> | undefined
): ReadonlyArray<ProviderOutput> => {
  const fromUrl = (url: string) => urlOutput(url, declared, { headers: headersFor(url) })
  if (output === null || output === undefined) return []
  if (typeof output === "string") return [isUrl(output) ? fromUrl(output) : textOutput(output)]
  if (Array.isArray(output) && output.every((item): item is string => typeof item === "string")) {
    if (output.length > 0 && output.every(isUrl)) return output.map(fromUrl)
    return [textOutput(output.join(""))]
  }
  return [textOutput(JSON.stringify(output), "application/json")]
}

