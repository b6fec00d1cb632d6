import { Clock, Effect, Exit, Ref, Semaphore } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

/** Replicate signs webhooks the Standard Webhooks way; a delivery older or newer than this is refused (replay). */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60

export interface WebhookHeaders {
  readonly id: string | undefined
  readonly timestamp: string | undefined
  readonly signature: string | undefined
}

/**
 * Why a delivery fails Replicate's documented check, or undefined when it passes: HMAC-SHA256
 * with the base64 key after "whsec_" over "{webhook-id}.{webhook-timestamp}.{raw body}", compared
 * in constant time with each space-separated "v1,<base64>" entry of webhook-signature; the
 * timestamp (seconds) within the tolerance of `nowMs`.
 */
export const webhookProblem = (
  headers: WebhookHeaders,
  body: Uint8Array,
  secret: string,
  nowMs: number
): string | undefined => {
  const { id, signature, timestamp } = headers
  if (id === undefined || timestamp === undefined || signature === undefined) {
    return "the webhook-id, webhook-timestamp and webhook-signature headers are required"
  }
  if (!/^\d+$/.test(timestamp)) return "webhook-timestamp is not a number of seconds"
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) {
    return "webhook-timestamp is more than 5 minutes away from now"
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest()
  const matches = signature.split(" ").some((entry) => {
    const [version, value] = entry.split(",", 2)
    if (version !== "v1" || value === undefined) return false
    const given = Buffer.from(value, "base64")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  return matches ? undefined : "no webhook-signature entry matches"
}

/** A signing secret fetched from Replicate is kept this long. */
const SECRET_KEPT_MS = 60 * 60_000
/** A fetch of it that failed is not tried again for this long. */
const FAILED_FETCH_KEPT_MS = 60_000

/**
 * The signing secret from `fetch`, kept an hour once fetched. A failed fetch is kept for a
 * minute too: an unsigned callback costs nothing to send, and each would otherwise make one
 * authenticated request to Replicate. Callbacks arriving together wait for one fetch.
 */
export const keptSecret = <E>(fetch: Effect.Effect<string, E>): Effect.Effect<string, E> => {
  const kept = Ref.makeUnsafe<{ readonly outcome: Exit.Exit<string, E>; readonly at: number } | undefined>(undefined)
  const oneFetch = Semaphore.makeUnsafe(1)
  return oneFetch.withPermits(1)(Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const last = yield* Ref.get(kept)
    if (last !== undefined && now - last.at < (Exit.isSuccess(last.outcome) ? SECRET_KEPT_MS : FAILED_FETCH_KEPT_MS)) {
      return yield* last.outcome
    }
    const outcome = yield* Effect.exit(fetch)
    yield* Ref.set(kept, { outcome, at: now })
    return yield* outcome
  }))
}
