import type { Layer } from "effect"
import { layerGuardedHttpClient } from "../adapters/net/guardedHttpClient.js"
import { layerNodeWebhookSender } from "../adapters/webhooks/NodeWebhookSender.js"
import { checkEngineOptions, composeEngine, type Engine, type EngineContext, type EngineParts, startEngine, type StartOptions } from "../src/engine.js"

/**
 * The whole engine's settings. Webhooks go out through the Node sender and output files are
 * downloaded behind the address guard (`settings.providerOutputAllowPrivate` lifts it) unless
 * you give your own `webhookSender` or `httpClient`.
 */
export interface EngineOptions<ES = unknown, EF = unknown, EW = never> extends EngineParts<ES, EF, EW> {
  /** Lets webhooks reach private and loopback addresses: development only. Default false. */
  readonly webhookAllowPrivate?: boolean | undefined
}

const withSender = <ES, EF, EW>(options: EngineOptions<ES, EF, EW>): EngineParts<ES, EF, EW> => ({
  ...options,
  webhookSender: options.webhookSender ?? layerNodeWebhookSender({ allowPrivate: options.webhookAllowPrivate ?? false }),
  httpClient: options.httpClient ?? layerGuardedHttpClient({ allowPrivate: options.settings?.providerOutputAllowPrivate ?? false })
})

/** The whole engine as a Layer: services, and background work for as long as its scope is open. */
export const layerEngine = <ES, EF, EW = never>(options: EngineOptions<ES, EF, EW>): Layer.Layer<EngineContext, ES | EF | EW> => {
  // Before the defaults are filled in, so a missing option is named rather than read from undefined.
  checkEngineOptions(options)
  return composeEngine(withSender(options))
}

/** The whole engine, started: a web handler for any server, and `dispose` to drain and close it. */
export const makeEngine = async <ES, EF, EW = never>(options: EngineOptions<ES, EF, EW> & StartOptions): Promise<Engine> =>
  startEngine(layerEngine(options), options)
