/**
 * genjobs/ai-sdk: the engine as a Vercel AI SDK provider (`@ai-sdk/provider` 4, an optional peer
 * of this package). `createGenjobs({ baseUrl, apiKey })` gives image, video and speech models
 * by catalog slug for `generateImage`, `experimental_generateVideo` and `generateSpeech` of
 * `ai` 7; every submit carries an Idempotency-Key derived from the call, so the AI SDK's retries
 * never charge twice. Built on genjobs/client (fetch only). See docs/ai-sdk.md.
 */
export { createGenjobs, type GenjobsProvider, type GenjobsSettings } from "./aiSdk/createGenjobs.js"
export type { GenjobsErrorData } from "./aiSdk/errors.js"
export type { GenjobsProviderOptions } from "./aiSdk/inputs.js"
