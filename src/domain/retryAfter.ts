/**
 * Retry-After as RFC 9110 gives it, delay-seconds or an HTTP date, in milliseconds from `nowMs`
 * (a date in the past is 0); undefined when absent or unreadable. Fractional seconds are read
 * too, as some providers send them. The one reading of the header: provider answers, webhook
 * receivers and the client (which is why this file imports nothing).
 */
export const parseRetryAfterMs = (value: string | null | undefined, nowMs: number): number | undefined => {
  const trimmed = value?.trim()
  if (trimmed === undefined || trimmed === "") return undefined
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}
