import { Config, Option } from "effect"
import { baseUrlConfig, secretConfig } from "../shared/configValues.js"
import { OPENAI_BASE_URL, type OpenAIProviderOptions } from "./OpenAIProvider.js"

/**
 * The OpenAI provider's settings from the environment: OPENAI_API_KEY (none: the provider is not
 * configured), OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID, as OpenAI's own SDKs read them.
 */
export const openaiProviderConfig: Config.Config<Option.Option<OpenAIProviderOptions>> = Config.option(
  Config.all({
    apiKey: secretConfig("OPENAI_API_KEY"),
    baseUrl: baseUrlConfig("OPENAI_BASE_URL", OPENAI_BASE_URL),
    organization: Config.option(Config.string("OPENAI_ORG_ID")),
    project: Config.option(Config.string("OPENAI_PROJECT_ID"))
  })
).pipe(
  Config.map(Option.map(({ apiKey, baseUrl, organization, project }): OpenAIProviderOptions => ({
    apiKey,
    baseUrl,
    ...Option.match(organization, { onNone: () => ({}), onSome: (value) => ({ organization: value }) }),
    ...Option.match(project, { onNone: () => ({}), onSome: (value) => ({ project: value }) })
  })))
)
