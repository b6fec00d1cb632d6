/** Longer URLs are refused: receivers and proxies commonly stop at 2,048 characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2_048

/**
 * C0 controls, DEL and C1 controls. The URL parser drops some (CR, LF, TAB) and percent-encodes
 * others, so a URL holding one is not the URL called; it is refused rather than rewritten.
 */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/

export type WebhookUrlCheck =
  | { readonly _tag: "Valid"; /** The parsed URL: what is stored, shown and called. */ readonly href: string }
  | { readonly _tag: "Invalid"; /** Completes "webhookUrl ...". */ readonly reason: string }

const invalid = (reason: string): WebhookUrlCheck => ({ _tag: "Invalid", reason })

/** Whether a job's webhookUrl may be taken, and the URL it stands for. The target's address is judged when it is called. */
export const parseWebhookUrl = (url: string): WebhookUrlCheck => {
  const tooLong = `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return invalid(tooLong)
  if (CONTROL_CHARACTER.test(url)) return invalid("must not contain control characters")
  if (!URL.canParse(url)) return invalid("is not a valid URL")
  const parsed = new URL(url)
  if (parsed.protocol !== "https:") return invalid("must use the https:// scheme")
  if (parsed.username !== "" || parsed.password !== "") return invalid("must not carry credentials")
  // Parsing can lengthen it (percent-encoding, punycode): the limit holds for the URL called.
  if (parsed.href.length > MAX_WEBHOOK_URL_LENGTH) return invalid(tooLong)
  return { _tag: "Valid", href: parsed.href }
}
