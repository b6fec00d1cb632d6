import { Effect, Option } from "effect"
import type { GenerationProvider } from "genjobs"
import { FAL_PROVIDER_ID, falProviderFromConfig } from "genjobs/providers/fal"
import { OPENAI_PROVIDER_ID, openaiProviderFromConfig } from "genjobs/providers/openai"
import { REPLICATE_PROVIDER_ID, replicateProviderFromConfig } from "genjobs/providers/replicate"
import { RUNWAY_PROVIDER_ID, runwayProviderFromConfig } from "genjobs/providers/runway"

/**
 * The real providers whose credential the environment holds (REPLICATE_API_TOKEN, FAL_KEY,
 * OPENAI_API_KEY, RUNWAYML_API_SECRET), by the provider id a catalog's models name. A provider
 * without its credential is not registered; a credential with invalid settings stops the start.
 */
export const configuredProviders = Effect.map(
  Effect.all({
    [REPLICATE_PROVIDER_ID]: replicateProviderFromConfig,
    [FAL_PROVIDER_ID]: falProviderFromConfig,
    [OPENAI_PROVIDER_ID]: openaiProviderFromConfig,
    [RUNWAY_PROVIDER_ID]: runwayProviderFromConfig
  }),
  (found): Record<string, GenerationProvider> =>
    Object.fromEntries(Object.entries(found).flatMap(([id, provider]) => Option.isSome(provider) ? [[id, provider.value]] : []))
)
