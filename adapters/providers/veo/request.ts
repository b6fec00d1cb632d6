/**
 * The fields of a Veo instance in the Gemini API (the prompt and the media it starts from):
 * every other field of the mapped input is a generation parameter (`aspectRatio`, `resolution`,
 * `durationSeconds`, `negativePrompt`, `personGeneration`, `seed`, ...).
 */
export const VEO_INSTANCE_FIELDS: ReadonlyArray<string> = ["prompt", "image", "lastFrame", "referenceImages", "video"]

/**
 * The predictLongRunning body for a job's mapped input: `{ instances: [one instance],
 * parameters }`. The catalog maps a job onto a flat input, which is split here, since its
 * mapping copies fields only at the top level.
 */
export const predictBody = (input: Readonly<Record<string, unknown>>) => {
  const instance: Record<string, unknown> = {}
  const parameters: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(input)) {
    if (VEO_INSTANCE_FIELDS.includes(field)) instance[field] = value
    else parameters[field] = value
  }
  return { instances: [instance], ...(Object.keys(parameters).length === 0 ? {} : { parameters }) }
}
