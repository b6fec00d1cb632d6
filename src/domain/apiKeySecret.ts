import { hash, randomBytes, timingSafeEqual } from "node:crypto"

/** Secrets look like `gjk_` + 43 base64url characters (32 random bytes). */
export const KEY_PREFIX = "gjk_"
const KEY_PATTERN = /^gjk_[A-Za-z0-9_-]{43}$/

export const generateKeySecret = (): string => KEY_PREFIX + randomBytes(32).toString("base64url")

export const isWellFormedKey = (presented: string): boolean => KEY_PATTERN.test(presented)

/** The one-shot `hash` (Node 21.7 and later): a Hash object per request cost about twice as much. */
export const hashKeySecret = (secret: string): string => hash("sha256", secret, "hex")

export const keyHint = (secret: string): string => secret.slice(0, KEY_PREFIX.length + 4)

/** Constant-time equality of two hex digests of equal length. */
export const sameDigest = (a: string, b: string): boolean => {
  const ba = Buffer.from(a, "hex")
  const bb = Buffer.from(b, "hex")
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb)
}
