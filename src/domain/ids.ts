import { Schema } from "effect"

export const JobId = Schema.String.pipe(Schema.brand("JobId"))
export type JobId = typeof JobId.Type
export const AccountId = Schema.String.pipe(Schema.brand("AccountId"))
export type AccountId = typeof AccountId.Type
export const ApiKeyId = Schema.String.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type
export const RequestId = Schema.String.pipe(Schema.brand("RequestId"))
export type RequestId = typeof RequestId.Type

const POOL_BYTES = 4_096
let pool = new Uint8Array(0)
let pooled = 0

/**
 * Bytes from the system's generator, drawn 4 KiB at a time and each handed out once: one call
 * per few hundred ids rather than one per id (a request makes two or three).
 */
const randomBytes = (count: number): Uint8Array => {
  if (pooled + count > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(Math.max(POOL_BYTES, count)))
    pooled = 0
  }
  const bytes = pool.subarray(pooled, pooled + count)
  pooled += count
  return bytes
}

/**
 * Ids are a kind prefix plus random bytes: unguessable, URL-safe and recognisable in logs.
 * WebCrypto and btoa, not node:crypto, so the schemas that import this module load in browsers
 * (the `genjobs/client` entry); base64 with `+`, `/` as `x` and no padding.
 */
export const randomToken = (bytes: number): string => base64Token(randomBytes(bytes))

/** Base64's alphabet with `+` and `/` as `x`. */
const TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789xx"

/**
 * `bytes` as base64 with `+`, `/` as `x` and no padding, written directly: btoa and two regular
 * expression replaces cost several times as much, twice a submit (its request's id and its job's).
 */
export const base64Token = (bytes: Uint8Array): string => {
  let out = ""
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += TOKEN_CHARS[n >> 18]! + TOKEN_CHARS[(n >> 12) & 63]! + TOKEN_CHARS[(n >> 6) & 63]! + TOKEN_CHARS[n & 63]!
  }
  const rest = bytes.length - i
  if (rest === 1) {
    const n = bytes[i]! << 16
    out += TOKEN_CHARS[n >> 18]! + TOKEN_CHARS[(n >> 12) & 63]!
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8)
    out += TOKEN_CHARS[n >> 18]! + TOKEN_CHARS[(n >> 12) & 63]! + TOKEN_CHARS[(n >> 6) & 63]!
  }
  return out
}

let lastMs = 0
let sequence = 0

/** A fixed-width base-36 time and sequence: ids made in one process sort in the order they were made. */
const orderedPrefix = (now: number): string => {
  const ms = Math.max(now, lastMs)
  sequence = ms === lastMs ? sequence + 1 : 0
  lastMs = ms
  return `${ms.toString(36).padStart(9, "0")}${sequence.toString(36).padStart(4, "0")}`
}

/**
 * Job ids sort in creation order within a process, then carry randomness. The job list breaks
 * createdAt ties by id, so jobs submitted in the same millisecond still list newest first.
 */
export const newJobId = (now: number): JobId => JobId.make(`job_${orderedPrefix(now)}${randomToken(10)}`)

/** Ledger lines sort the same way: a statement lists two credits of one millisecond in the order they were posted. */
export const newLedgerEntryId = (now: number): string => `led_${orderedPrefix(now)}${randomToken(10)}`
export const newAccountId = (): AccountId => AccountId.make(`acc_${randomToken(12)}`)
export const newApiKeyId = (): ApiKeyId => ApiKeyId.make(`key_${randomToken(12)}`)
export const newRequestId = (): RequestId => RequestId.make(`req_${randomToken(12)}`)
