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

/**
 * Ids are a kind prefix plus 20 random bytes in base32hex-like lowercase: unguessable,
 * URL-safe and recognisable in logs.
 */
const token = (bytes: number) => randomBytes(bytes).toString("base64url").replace(/[-_]/g, "x")

export const newJobId = (): JobId => JobId.make(`job_${token(16)}`)
export const newAccountId = (): AccountId => AccountId.make(`acc_${token(12)}`)
export const newApiKeyId = (): ApiKeyId => ApiKeyId.make(`key_${token(12)}`)
export const newRequestId = (): RequestId => RequestId.make(`req_${token(12)}`)
