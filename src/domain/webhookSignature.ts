import { createHmac, timingSafeEqual } from "node:crypto"

/** Spec 6.3: "sha256=" + lowercase hex HMAC-SHA256 over `${timestamp}.${rawBody}`. */
export const signWebhook = (secret: string, timestamp: number, body: string): string =>
  `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`

/**
 * The X-Service-Signature value: one signature per secret, comma-separated, so receivers keep
 * working while an account rotates its webhook secret.
 */
export const signatureHeader = (secrets: ReadonlyArray<string>, timestamp: number, body: string): string =>
  secrets.map((s) => signWebhook(s, timestamp, body)).join(",")

export type VerifyResult =
  | { readonly ok: true; readonly timestamp: number }
  | { readonly ok: false; readonly reason: "missing_headers" | "bad_timestamp" | "stale_timestamp" | "bad_signature" }

const header = (headers: Headers | Record<string, string | ReadonlyArray<string> | undefined>, name: string) => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined
  const record = headers as Record<string, string | ReadonlyArray<string> | undefined>
  const key = Object.keys(record).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : record[key]
  return Array.isArray(value) ? value.join(",") : (value as string | undefined)
}

const sameText = (a: string, b: string) => {
  const ba = Buffer.from(a)
  const bb = Buffer.from(b)
  return ba.length === bb.length && timingSafeEqual(ba, bb)
}

/**
 * For receivers: checks X-Service-Timestamp is within `toleranceSeconds` of now and that one of
 * the signatures in X-Service-Signature matches `secret`, comparing in constant time. `body`
 * must be the raw request body, byte for byte as received.
 */
export const verifyWebhook = (options: {
  readonly secret: string
  readonly headers: Headers | Record<string, string | ReadonlyArray<string> | undefined>
  readonly body: string
  readonly toleranceSeconds?: number
  readonly nowSeconds?: number
}): VerifyResult => {
  const timestampText = header(options.headers, "x-service-timestamp")
  const signatures = header(options.headers, "x-service-signature")
  if (timestampText === undefined || signatures === undefined) return { ok: false, reason: "missing_headers" }
  if (!/^\d{1,12}$/.test(timestampText.trim())) return { ok: false, reason: "bad_timestamp" }
  const timestamp = Number(timestampText.trim())
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) return { ok: false, reason: "stale_timestamp" }
  const expected = signWebhook(options.secret, timestamp, options.body)
  const match = signatures.split(",").map((s) => s.trim()).some((s) => sameText(s, expected))
  return match ? { ok: true, timestamp } : { ok: false, reason: "bad_signature" }
}
