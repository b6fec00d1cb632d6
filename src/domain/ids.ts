import { randomBytes } from "node:crypto"
import { Schema } from "effect"

export const JobId = Schema.String.pipe(Schema.brand("JobId"))
export type JobId = typeof JobId.Type
export const AccountId = Schema.String.pipe(Schema.brand("AccountId"))
export type AccountId = typeof AccountId.Type
export const ApiKeyId = Schema.String.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type
export const RequestId = Schema.String.pipe(Schema.brand("RequestId"))
export type RequestId = typeof RequestId.Type

/** Ids are a kind prefix plus random bytes: unguessable, URL-safe and recognisable in logs. */
const token = (bytes: number) => randomBytes(bytes).toString("base64url").replace(/[-_]/g, "x")

let lastMs = 0
let sequence = 0

/**
 * Job ids sort in creation order within a process: a fixed-width base-36 time and sequence
 * prefix, then randomness. The job list breaks createdAt ties by id, so jobs submitted in the
 * same millisecond still list newest first.
 */
export const newJobId = (now: number): JobId => {
  const ms = Math.max(now, lastMs)
  sequence = ms === lastMs ? sequence + 1 : 0
  lastMs = ms
  return JobId.make(`job_${ms.toString(36).padStart(9, "0")}${sequence.toString(36).padStart(4, "0")}${token(10)}`)
}
export const newAccountId = (): AccountId => AccountId.make(`acc_${token(12)}`)
export const newApiKeyId = (): ApiKeyId => ApiKeyId.make(`key_${token(12)}`)
export const newRequestId = (): RequestId => RequestId.make(`req_${token(12)}`)
