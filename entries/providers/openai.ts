/**
 * genjobs/providers/openai: OpenAI's Images API (gpt-image-1, dall-e-3: answered within the
 * start) as a generation provider. OpenAI removed its Videos API (Sora) on 2026-09-24: video
 * models run through genjobs/providers/veo or genjobs/providers/openrouter. See docs/providers.md.
 */
export {
  OPENAI_BASE_URL,
  OPENAI_PROVIDER_ID,
  type OpenAIOptions,
  openaiProvider
} from "../../adapters/providers/openai/OpenAIProvider.js"
export { openaiConfig, openaiProviderFromConfig } from "../../adapters/providers/openai/config.js"
