import { createHmac, timingSafeEqual } from "node:crypto"
import { standardSignature } from "./standardWebhook.js"
import { readSignedRequest, readStandardRequest, type VerifyOptions, type VerifyResult } from "./webhookRequest.js"

export type { VerifyResult } from "./webhookRequest.js"

/** Spec 6.3: "sha256=" + lowercase hex HMAC-SHA256 over `${timestamp}.${rawBody}`. */
export const signWebhook = (secret: string, timestamp: number, body: string): string =>
  `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`

/**
 * The X-Service-Signature value: one signature per secret, comma-separated, so receivers keep
 * working while an account rotates its webhook secret.
 */
export const signatureHeader = (secrets: ReadonlyArray<string>, timestamp: number, body: string): string =>
  secrets.map((s) => signWebhook(s, timestamp, body)).join(",")

const sameText = (a: string, b: string) => {
  const ba = Buffer.from(a)
  const bb = Buffer.from(b)
  return ba.length === bb.length && timingSafeEqual(ba, bb)
}

/**
 * For receivers: checks X-Service-Timestamp is within `toleranceSeconds` of now and that one of
 * the signatures in X-Service-Signature matches `secret`, comparing in constant time. `body`
 * must be the raw request body, byte for byte as received. With `standard`, webhook-signature must
 * match too (Standard Webhooks, see standardWebhook.ts).
 */
export const verifyWebhook = (options: VerifyOptions): VerifyResult => {
  const request = readSignedRequest(options)
  if (!request.ok) return request
  const expected = signWebhook(options.secret, request.timestamp, options.body)
  const match = request.signatures.some((s) => sameText(s, expected))
  if (!match) return { ok: false, reason: "bad_signature" }
  if (options.standard !== true) return { ok: true, timestamp: request.timestamp }
  const standard = readStandardRequest(options)
  if (!standard.ok) return standard
  const signed = standardSignature(options.secret, standard.id, standard.timestamp, options.body).slice(3)
  return standard.signatures.some((s) => sameText(s, signed))
    ? { ok: true, timestamp: request.timestamp, webhookId: standard.id }
    : { ok: false, reason: "bad_signature" }
}
