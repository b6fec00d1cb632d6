import { createHmac } from "node:crypto"

/**
 * Standard Webhooks (https://www.standardwebhooks.com), sent beside the spec's X-Service-* headers
 * when an account turns them on. The key is the account's webhook secret as it is shown, every
 * byte of it (`whsec_` too), the same key X-Service-Signature uses: a receiver passes it to
 * `new Webhook(secret, { format: "raw" })`, or to a library that wants the standard's base64 form
 * as `whsec_` + base64 of those bytes.
 */

/** `v1,` + base64 HMAC-SHA256 over `${id}.${timestamp}.${body}`. */
export const standardSignature = (key: string | Uint8Array, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`

/** The three headers of one attempt: one signature per secret, space-separated as the standard lists them. */
export const standardHeaders = (
  secrets: ReadonlyArray<string>,
  id: string,
  timestamp: number,
  body: string
): Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string> => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": secrets.map((s) => standardSignature(s, id, timestamp, body)).join(" ")
})

