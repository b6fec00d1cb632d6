/**
 * genjobs/providers/openai: the Images API (gpt-image-1, dall-e-3: answered within the start) and
 * the Videos API (sora-2, sora-2-pro: created, polled, fetched) as a generation provider. See
 * docs/providers.md.
 */
export {
  isOpenAIVideoModel,
  OPENAI_BASE_URL,
  OPENAI_PROVIDER_ID,
  type OpenAIOptions,
  openaiProvider
} from "../../adapters/providers/openai/OpenAIProvider.js"
export { openaiConfig, openaiProviderFromConfig } from "../../adapters/providers/openai/config.js"
