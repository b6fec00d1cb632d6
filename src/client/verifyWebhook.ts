import { readSignedRequest, type VerifyOptions, type VerifyResult } from "../domain/webhookRequest.js"

const SIGNATURE = /^sha256=([0-9a-f]{64})$/

const hexBytes = (hex: string) => Uint8Array.from(hex.match(/../g)!, (pair) => parseInt(pair, 16))

/**
 * The webhook check of `genjobs` (X-Service-Timestamp within `toleranceSeconds`, one signature of
 * X-Service-Signature matching) with WebCrypto instead of node:crypto, so it runs in browsers,
 * Deno, Bun and edge runtimes; hence async. `crypto.subtle.verify` compares in constant time.
 */
export const verifyWebhook = async (options: VerifyOptions): Promise<VerifyResult> => {
  const request = readSignedRequest(options)
  if (!request.ok) return request
  const encoder = new TextEncoder()
  const key = await crypto.subtle.importKey("raw", encoder.encode(options.secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"])
  const signed = encoder.encode(`${request.timestamp}.${options.body}`)
  for (const signature of request.signatures) {
    const hex = SIGNATURE.exec(signature)?.[1]
    if (hex !== undefined && await crypto.subtle.verify("HMAC", key, hexBytes(hex), signed)) {
      return { ok: true, timestamp: request.timestamp }
    }
  }
  return { ok: false, reason: "bad_signature" }
}
