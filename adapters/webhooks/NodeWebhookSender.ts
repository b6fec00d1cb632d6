import { Effect, Layer } from "effect"
import type { ClientRequest } from "node:http"
import { request } from "node:https"
import { forbiddenHostOf } from "../../src/domain/publicAddress.js"
import { deadlineReason } from "../../src/domain/webhookSchedule.js"
import { WebhookNotDelivered, type WebhookResponse, WebhookSender } from "../../src/ports/WebhookSender.js"
import { checkedLookup } from "../net/checkedLookup.js"

export interface SenderOptions {
  /** Development only: lets webhooks reach private and loopback addresses. */
  readonly allowPrivate: boolean
  /** Extra trusted certificate authorities (PEM), for receivers with a private CA. */
  readonly ca?: string | undefined
}

const BODY_LIMIT = 1_024

/**
 * One POST, bounded as a whole by `timeoutMs`: DNS, connect, TLS, headers and the answer's body
 * share one timer. A socket idle timeout would not do: a receiver trickling a byte now and then
 * never lets the socket go idle.
 */
export const makeNodeWebhookSender = (options: SenderOptions): WebhookSender["Service"] => ({
  send: (webhook) =>
    Effect.callback<{ statusCode: number; retryAfter: string | undefined; body: string }, WebhookNotDelivered>((resume) => {
      let settled = false
      let req: ClientRequest | undefined
      const settle = (effect: Effect.Effect<WebhookResponse, WebhookNotDelivered>) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        resume(effect)
      }
      const fail = (reason: string) => settle(Effect.fail(new WebhookNotDelivered({ reason })))
      const deadline = setTimeout(() => {
        fail(deadlineReason(webhook.timeoutMs))
        req?.destroy()
      }, webhook.timeoutMs)
      if (!URL.canParse(webhook.url)) return fail("the webhook URL is not a URL")
      const url = new URL(webhook.url)
      if (url.protocol !== "https:") return fail("refused: webhooks go to https URLs only")
      const forbidden = forbiddenHostOf(url)
      if (forbidden !== undefined && !options.allowPrivate) return fail(`refused: ${forbidden} is not a public address`)
      req = request(url, {
        method: "POST",
        headers: { ...webhook.headers, "content-length": String(Buffer.byteLength(webhook.body)) },
        lookup: checkedLookup(options.allowPrivate),
        // A fresh connection per attempt: a pooled socket would skip the address check.
        agent: false,
        ...(options.ca === undefined ? {} : { ca: options.ca })
      }, (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          if (body.length < BODY_LIMIT) body += chunk.slice(0, BODY_LIMIT - body.length)
        })
        res.on("end", () => {
          const retryAfter = res.headers["retry-after"]
          settle(Effect.succeed({ statusCode: res.statusCode ?? 0, retryAfter, body }))
        })
        res.on("error", (error) => fail(`the answer broke off: ${error.message}`))
      })
      req.on("error", (error) => fail(error.message))
      req.end(webhook.body)
      const sent = req
      return Effect.sync(() => {
        clearTimeout(deadline)
        sent.destroy()
      })
    })
})

export const layerNodeWebhookSender = (options: SenderOptions) =>
  Layer.succeed(WebhookSender, makeNodeWebhookSender(options))
