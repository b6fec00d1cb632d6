import { Context, Schema, type Effect } from "effect"

export interface WebhookRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The whole attempt's deadline: DNS, connect, TLS, headers and the answer's body. */
  readonly timeoutMs: number
}

export interface WebhookResponse {
  readonly statusCode: number
  readonly retryAfter: string | undefined
  /** The start of the answer's body, for the attempt log. */
  readonly body: string
}

/** No HTTP answer: refused target, DNS failure, connection error or timeout. */
export class WebhookNotDelivered extends Schema.TaggedError<WebhookNotDelivered>()("WebhookNotDelivered", {
  reason: Schema.String
}) {}

/** Sends one webhook POST; never follows redirects. */
export class WebhookSender extends Context.Service<WebhookSender, {
  readonly send: (request: WebhookRequest) => Effect.Effect<WebhookResponse, WebhookNotDelivered>
}>()("genjobs/WebhookSender") {}
