import { Effect } from "effect"
import type { WebhookSender } from "../../src/ports/WebhookSender.js"

/** One webhook the engine would have POSTed. */
export interface SentWebhook {
  readonly url: string
  /** Signature, timestamp, delivery id and attempt headers included: check them with `verifyWebhook`. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The body, parsed. */
  readonly payload: any
}

export interface RecordingWebhookSender {
  readonly sender: WebhookSender["Service"]
  readonly sent: ReadonlyArray<SentWebhook>
  /** The status the "receiver" answers from now on (default 200); a non-2xx one makes the engine retry later. */
  readonly respondWith: (statusCode: number) => void
}

/** A webhook sender that sends nothing: it keeps every request and answers as told. */
export const makeRecordingWebhookSender = (): RecordingWebhookSender => {
  const sent: Array<SentWebhook> = []
  let statusCode = 200
  return {
    sent,
    respondWith: (status) => void (statusCode = status),
    sender: {
      send: (request) =>
        Effect.sync(() => {
          sent.push({ url: request.url, headers: request.headers, body: request.body, payload: JSON.parse(request.body) })
          return { statusCode, retryAfter: undefined, body: "" }
        })
    }
  }
}
