/**
 * genjobs/testing: the engine over memory stores with a scriptable fake provider, in one line.
 * `makeTestEngine()` for Promise tests; `TestEngine.layer()` for `it.effect`, where TestClock
 * drives leases, rate limits and expiry. See docs/testing-your-app.md.
 */
export { type AsyncTestAccount, type AsyncTestEngine, makeTestEngine } from "../adapters/testing/makeTestEngine.js"
export {
  TEST_ADMIN_TOKEN,
  TestEngine,
  type TestEngineOptions,
  type TestEngineService,
  type TestWebhooks
} from "../adapters/testing/TestEngine.js"
export { type AccountOptions, type ListQuery, type SubmitOptions, type TestAccount } from "../adapters/testing/account.js"
export { ApiError, type Reply, type Requester, type RequestOptions, TEST_ORIGIN } from "../adapters/testing/client.js"
export { type FakeProvider, type Hang, type JobMatch, makeFakeProvider } from "../adapters/testing/FakeProvider.js"
export {
  audioOutput,
  imageOutput,
  type OutputOptions,
  textOutput,
  TINY_PNG,
  TINY_WAV,
  videoOutput
} from "../adapters/testing/outputs.js"
export { TEST_PROVIDER_ID, testCatalog } from "../adapters/testing/catalog.js"
export { type SentWebhook } from "../adapters/testing/RecordingWebhookSender.js"
