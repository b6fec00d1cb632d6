/**
 * What verifying a webhook needs before any HMAC: the headers read and the timestamp checked.
 * Shared by the Node verifier (webhookSignature.ts) and the WebCrypto one of `genjobs/client`,
 * so this module imports nothing Node-only.
 */

export type VerifyResult =
  /** `webhookId`: the checked webhook-id, when `standard` asked for it. */
  | { readonly ok: true; readonly timestamp: number; readonly webhookId?: string }
  | { readonly ok: false; readonly reason: "missing_headers" | "bad_timestamp" | "stale_timestamp" | "bad_signature" }

export type WebhookHeaders = Headers | Record<string, string | ReadonlyArray<string> | undefined>

export interface VerifyOptions {
  readonly secret: string
  readonly headers: WebhookHeaders
  /** The raw request body, byte for byte as received. */
  readonly body: string
  readonly toleranceSeconds?: number
  readonly nowSeconds?: number
  /**
   * Also require the Standard Webhooks headers (an account with `standardWebhooks` on) and check
   * webhook-signature over `${webhook-id}.${webhook-timestamp}.${body}`: webhook-id, the key to
   * deduplicate by, is then signed too.
   */
  readonly standard?: boolean
}

const header = (headers: WebhookHeaders, name: string) => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined
  const record = headers as Record<string, string | ReadonlyArray<string> | undefined>
  const key = Object.keys(record).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : record[key]
  return Array.isArray(value) ? value.join(",") : (value as string | undefined)
}

/** The signed text is `${timestamp}.${body}`; `signatures` are every value of X-Service-Signature. */
export type SignedRequest =
  | { readonly ok: true; readonly timestamp: number; readonly signatures: ReadonlyArray<string> }
  | Extract<VerifyResult, { ok: false }>

export const readSignedRequest = (options: VerifyOptions): SignedRequest => {
  const timestampText = header(options.headers, "x-service-timestamp")
  const signatures = header(options.headers, "x-service-signature")
  if (timestampText === undefined || signatures === undefined) return { ok: false, reason: "missing_headers" }
  const timestamp = checkedTimestamp(timestampText, options)
  if (typeof timestamp !== "number") return timestamp
  return { ok: true, timestamp, signatures: signatures.split(",").map((s) => s.trim()) }
}

const checkedTimestamp = (text: string, options: VerifyOptions): number | Extract<VerifyResult, { ok: false }> => {
  if (!/^\d{1,12}$/.test(text.trim())) return { ok: false, reason: "bad_timestamp" }
  const timestamp = Number(text.trim())
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) return { ok: false, reason: "stale_timestamp" }
  return timestamp
}

/** Standard Webhooks: the signed text is `${id}.${timestamp}.${body}`; `signatures` are the `v1,` ones of webhook-signature. */
export type StandardRequest =
  | { readonly ok: true; readonly id: string; readonly timestamp: number; readonly signatures: ReadonlyArray<string> }
  | Extract<VerifyResult, { ok: false }>

export const readStandardRequest = (options: VerifyOptions): StandardRequest => {
  const id = header(options.headers, "webhook-id")
  const timestampText = header(options.headers, "webhook-timestamp")
  const signatures = header(options.headers, "webhook-signature")
  if (id === undefined || timestampText === undefined || signatures === undefined) return { ok: false, reason: "missing_headers" }
  const timestamp = checkedTimestamp(timestampText, options)
  if (typeof timestamp !== "number") return timestamp
  const v1 = signatures.split(" ").filter((s) => s.startsWith("v1,")).map((s) => s.slice(3))
  return { ok: true, id, timestamp, signatures: v1 }
}
