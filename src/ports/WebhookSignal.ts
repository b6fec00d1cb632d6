import { Context, type Effect } from "effect"

/**
 * Wakes idle webhook dispatchers when a delivery falls due now (a job with a webhookUrl ended,
 * an operator retried a delivery). Only a hint: dispatchers also poll, so a lost signal delays a
 * webhook by at most one poll interval and never loses it.
 */
export class WebhookSignal extends Context.Service<WebhookSignal, {
  readonly notify: Effect.Effect<void>
  /** Returns when notified or after `maxMs`, whichever is first. */
  readonly wait: (maxMs: number) => Effect.Effect<void>
}>()("genjobs/WebhookSignal") {}
