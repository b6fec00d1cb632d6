import { createHmac, timingSafeEqual } from "node:crypto"

/** A delivery signed longer ago (or further ahead) than this is refused: a replay. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60

/**
 * Why a delivery fails OpenRouter's documented check, or undefined when it passes:
 * `X-OpenRouter-Signature: t=<unix seconds>,v1=<hex>`, where the hex is HMAC-SHA256 with the
 * workspace's signing secret over `<t>,<raw body>`; any `v1` entry may match (compared in
 * constant time), and `t` must be within the tolerance of `nowMs`.
 */
export const webhookProblem = (
  header: string | undefined,
  body: Uint8Array,
  secret: string,
  nowMs: number
): string | undefined => {
  if (header === undefined) return "the X-OpenRouter-Signature header is required"
  const entries = header.split(",").map((entry) => entry.trim())
  const timestamp = entries.find((entry) => entry.startsWith("t="))?.slice(2)
  const signatures = entries.filter((entry) => entry.startsWith("v1=")).map((entry) => entry.slice(3))
  if (timestamp === undefined || signatures.length === 0) return "X-OpenRouter-Signature must carry t=<timestamp> and v1=<signature>"
  if (!/^\d+$/.test(timestamp)) return "the signature's timestamp is not a number of seconds"
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) {
    return "the signature's timestamp is more than 5 minutes away from now"
  }
  const expected = createHmac("sha256", secret).update(`${timestamp},`).update(body).digest()
  const matches = signatures.some((hex) => {
    if (!/^[0-9a-f]+$/i.test(hex)) return false
    const given = Buffer.from(hex, "hex")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  return matches ? undefined : "no v1 signature matches"
}
