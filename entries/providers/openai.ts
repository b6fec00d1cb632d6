/**
 * OpenAI as a generation provider: the Images API (gpt-image-1, dall-e-3: answered within the
 * start) and the Videos API (sora-2, sora-2-pro: created, polled, fetched). See docs/providers.md.
 */
export {
  isOpenAIVideoModel,
  OPENAI_BASE_URL,
  openaiProvider,
  type OpenAIProviderOptions
} from "../../adapters/providers/openai/OpenAIProvider.js"
export { openaiProviderConfig } from "../../adapters/providers/openai/config.js"
