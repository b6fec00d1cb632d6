import { readSignedRequest, readStandardRequest, type VerifyOptions, type VerifyResult } from "../domain/webhookRequest.js"

const SIGNATURE = /^sha256=([0-9a-f]{64})$/

const hexBytes = (hex: string) => Uint8Array.from(hex.match(/../g)!, (pair) => parseInt(pair, 16))

/** A base64 HMAC-SHA256 (32 bytes) as its bytes; undefined for anything else. */
const base64Digest = (text: string) =>
  /^[A-Za-z0-9+/]{43}=$/.test(text) ? Uint8Array.from(atob(text), (c) => c.charCodeAt(0)) : undefined

/** True when one of the digests is the HMAC of `signed` under `key`. */
const anyVerifies = async (key: CryptoKey, digests: ReadonlyArray<Uint8Array<ArrayBuffer> | undefined>, signed: Uint8Array<ArrayBuffer>) => {
  for (const digest of digests) {
    if (digest !== undefined && await crypto.subtle.verify("HMAC", key, digest, signed)) return true
  }
  return false
}

/**
 * The webhook check of `genjobs` (X-Service-Timestamp within `toleranceSeconds`, one signature of
 * X-Service-Signature matching) with WebCrypto instead of node:crypto, so it runs in browsers,
 * Deno, Bun and edge runtimes; hence async. `crypto.subtle.verify` compares in constant time.
 * With `standard`, the Standard Webhooks webhook-signature must match too (same key).
 */
export const verifyWebhook = async (options: VerifyOptions): Promise<VerifyResult> => {
  const request = readSignedRequest(options)
  if (!request.ok) return request
  const encoder = new TextEncoder()
  const key = await crypto.subtle.importKey("raw", encoder.encode(options.secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"])
  const signed = encoder.encode(`${request.timestamp}.${options.body}`)
  const hexDigests = request.signatures.map((s) => SIGNATURE.exec(s)?.[1]).map((hex) => hex === undefined ? undefined : hexBytes(hex))
  if (!await anyVerifies(key, hexDigests, signed)) return { ok: false, reason: "bad_signature" }
  if (options.standard !== true) return { ok: true, timestamp: request.timestamp }
  const standard = readStandardRequest(options)
  if (!standard.ok) return standard
  const signedStandard = encoder.encode(`${standard.id}.${standard.timestamp}.${options.body}`)
  return await anyVerifies(key, standard.signatures.map(base64Digest), signedStandard)
    ? { ok: true, timestamp: request.timestamp, webhookId: standard.id }
    : { ok: false, reason: "bad_signature" }
}
