import { Config } from "effect"
import { baseUrlConfig, countConfig, optionalConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { OPENAI_BASE_URL, type OpenAIOptions, openaiProvider } from "./OpenAIProvider.js"

/**
 * OpenAI's options from the environment, as OpenAI's own SDKs read them: OPENAI_API_KEY,
 * OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID.
 * Also OPENAI_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const openaiConfig: Config.Config<OpenAIOptions> = Config.all({
  apiKey: secretConfig("OPENAI_API_KEY"),
  baseUrl: baseUrlConfig("OPENAI_BASE_URL", OPENAI_BASE_URL),
  organization: optionalConfig(Config.String("OPENAI_ORG_ID")),
  project: optionalConfig(Config.String("OPENAI_PROJECT_ID")),
  maxConnections: countConfig("OPENAI_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The OpenAI provider when OPENAI_API_KEY is set, else none. */
export const openaiProviderFromConfig = providerFromConfig("OPENAI_API_KEY", openaiConfig, openaiProvider)
