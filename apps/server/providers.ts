import { Effect, Option } from "effect"
import type { GenerationProvider } from "genjobs"
import { FAL_PROVIDER_ID, falProviderFromConfig } from "genjobs/providers/fal"
import { OPENAI_PROVIDER_ID, openaiProviderFromConfig } from "genjobs/providers/openai"
import { OPENROUTER_PROVIDER_ID, openRouterProviderFromConfig } from "genjobs/providers/openrouter"
import { REPLICATE_PROVIDER_ID, replicateProviderFromConfig } from "genjobs/providers/replicate"
import { RUNWAY_PROVIDER_ID, runwayProviderFromConfig } from "genjobs/providers/runway"
import { VEO_PROVIDER_ID, veoProviderFromConfig } from "genjobs/providers/veo"

/** The variable that registers each real provider: named in the start report of a catalog version that cannot run. */
export const PROVIDER_CREDENTIALS: Readonly<Record<string, string>> = {
  [REPLICATE_PROVIDER_ID]: "REPLICATE_API_TOKEN",
  [FAL_PROVIDER_ID]: "FAL_KEY",
  [OPENAI_PROVIDER_ID]: "OPENAI_API_KEY",
  [RUNWAY_PROVIDER_ID]: "RUNWAYML_API_SECRET",
  [VEO_PROVIDER_ID]: "GEMINI_API_KEY",
  [OPENROUTER_PROVIDER_ID]: "OPENROUTER_API_KEY"
}

/**
 * The real providers whose credential the environment holds (REPLICATE_API_TOKEN, FAL_KEY,
 * OPENAI_API_KEY, RUNWAYML_API_SECRET, GEMINI_API_KEY, OPENROUTER_API_KEY), by the provider id a
 * catalog's models name. A provider without its credential is not registered; a credential with
 * invalid settings stops the start.
 */
export const configuredProviders = Effect.map(
  Effect.all({
    [REPLICATE_PROVIDER_ID]: replicateProviderFromConfig,
    [FAL_PROVIDER_ID]: falProviderFromConfig,
    [OPENAI_PROVIDER_ID]: openaiProviderFromConfig,
    [RUNWAY_PROVIDER_ID]: runwayProviderFromConfig,
    [VEO_PROVIDER_ID]: veoProviderFromConfig,
    [OPENROUTER_PROVIDER_ID]: openRouterProviderFromConfig
  }),
  (found): Record<string, GenerationProvider> =>
    Object.fromEntries(Object.entries(found).flatMap(([id, provider]) => Option.isSome(provider) ? [[id, provider.value]] : []))
)
