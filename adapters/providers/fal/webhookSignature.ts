import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto"

/** fal.ai's documented leeway for X-Fal-Webhook-Timestamp (seconds), either way. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60

const ed25519Key = (jwk: Record<string, unknown>): KeyObject => {
  if (jwk["kty"] !== "OKP" || jwk["crv"] !== "Ed25519" || typeof jwk["x"] !== "string") {
    throw new Error("a JWK of fal.ai's webhook keys must be an Ed25519 key (kty OKP, crv Ed25519, x)")
  }
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk["x"] }, format: "jwk" })
}

const rawKey = (text: string): KeyObject => {
  const bytes = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")
  if (bytes.length !== 32) throw new Error(`"${text.slice(0, 12)}..." is not a base64 Ed25519 public key (32 bytes)`)
  return ed25519Key({ kty: "OKP", crv: "Ed25519", x: bytes.toString("base64url") })
}

/**
 * fal.ai's webhook public keys as configured, since they cannot be fetched here: its JWKS
 * document (https://rest.alpha.fal.ai/.well-known/jwks.json, `{"keys":[{kty,crv,x}]}`), one JWK,
 * or base64 (or base64url) raw keys separated by commas or spaces. Throws on anything else.
 */
export const parsePublicKeys = (text: string): ReadonlyArray<KeyObject> => {
  const trimmed = text.trim()
  if (trimmed.startsWith("{")) {
    const document = JSON.parse(trimmed) as Record<string, unknown>
    const jwks = Array.isArray(document["keys"]) ? document["keys"] as Array<Record<string, unknown>> : [document]
    if (jwks.length === 0) throw new Error("the JWKS holds no key")
    return jwks.map(ed25519Key)
  }
  const keys = trimmed.split(/[\s,]+/).filter((part) => part !== "")
  if (keys.length === 0) throw new Error("no key given")
  return keys.map(rawKey)
}

export interface FalWebhookHeaders {
  readonly requestId: string | undefined
  readonly userId: string | undefined
  readonly timestamp: string | undefined
  readonly signature: string | undefined
}

/**
 * Why a delivery fails fal.ai's documented check, or undefined when it passes: an ED25519
 * signature (hex) by one of `keys` over "{request id}\n{user id}\n{timestamp}\n{sha256 hex of
 * the raw body}", the timestamp (seconds) within the tolerance of `nowMs`.
 */
export const falWebhookProblem = (
  headers: FalWebhookHeaders,
  body: Uint8Array,
  keys: ReadonlyArray<KeyObject>,
  nowMs: number
): string | undefined => {
  const { requestId, signature, timestamp, userId } = headers
  if (requestId === undefined || userId === undefined || timestamp === undefined || signature === undefined) {
    return "the X-Fal-Webhook-Request-Id, -User-Id, -Timestamp and -Signature headers are required"
  }
  if (!/^\d+$/.test(timestamp)) return "X-Fal-Webhook-Timestamp is not a number of seconds"
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) {
    return "X-Fal-Webhook-Timestamp is more than 5 minutes away from now"
  }
  if (!/^[0-9a-fA-F]{128}$/.test(signature)) return "X-Fal-Webhook-Signature is not a hex ED25519 signature"
  const digest = createHash("sha256").update(body).digest("hex")
  const message = Buffer.from([requestId, userId, timestamp, digest].join("\n"), "utf8")
  const given = Buffer.from(signature, "hex")
  return keys.some((key) => verify(null, message, key, given)) ? undefined : "no configured key verifies the signature"
}
