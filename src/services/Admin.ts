import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { invalidAllowedEntries } from "../domain/access.js"
import { type Account, type ApiKey, type NewAccount, type NewApiKey } from "../domain/account.js"
import { generateKeySecret, hashKeySecret, keyHint } from "../domain/apiKeySecret.js"
import { engineError, type EngineError, type StoreError } from "../domain/errors.js"
import { MAX_MICRO_CENTS } from "../domain/limits.js"
import { type AccountId, type ApiKeyId, newAccountId, newApiKeyId } from "../domain/ids.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { ApiKeyRepo } from "../ports/ApiKeyRepo.js"

export interface CreatedKey {
  readonly record: ApiKey
  /** The secret: shown once, never stored. */
  readonly secret: string
}

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64url")}`

const accountNotFound = (id: string) => engineError("NOT_FOUND", `No account "${id}"`, { accountId: id })

export const make = Effect.gen(function*() {
  const accounts = yield* AccountRepo
  const keys = yield* ApiKeyRepo

  const createAccount = (input: NewAccount): Effect.Effect<Account, StoreError> =>
    Effect.gen(function*() {
      const account: Account = {
        id: newAccountId(),
        name: input.name,
        balanceMicroCents: 0,
        maxConcurrentJobs: input.maxConcurrentJobs,
        segments: input.segments,
        allowedModels: input.allowedModels,
        discounts: input.discounts,
        webhookSecret: newWebhookSecret(),
        previousWebhookSecret: null,
        previousWebhookSecretExpiresAt: null,
        createdAt: yield* Clock.currentTimeMillis
      }
      return yield* accounts.create(account, input.creditsMicroCents)
    })

  const getAccount = (id: string): Effect.Effect<Account, EngineError | StoreError> =>
    accounts.get(id as AccountId).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }))
    )

  const addCredits = (id: string, amountMicroCents: number): Effect.Effect<Account, EngineError | StoreError> =>
    Effect.gen(function*() {
      if (!Number.isSafeInteger(amountMicroCents) || amountMicroCents <= 0) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", "amountMicroCents must be a positive integer", { field: "amountMicroCents" })
        )
      }
      // A balance stays within MAX_MICRO_CENTS, so it adds up exactly and any charge or refund fits the store.
      const account = yield* getAccount(id)
      if (amountMicroCents > MAX_MICRO_CENTS - account.balanceMicroCents) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", `The balance would exceed ${MAX_MICRO_CENTS} micro-cents`, {
            field: "amountMicroCents",
            balanceMicroCents: account.balanceMicroCents
          })
        )
      }
      const updated = yield* accounts.addCredits(account.id, amountMicroCents, yield* Clock.currentTimeMillis)
      return yield* Option.match(updated, { onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed })
    })

  const createKey = (accountId: string, input: NewApiKey): Effect.Effect<CreatedKey, EngineError | StoreError> =>
    Effect.gen(function*() {
      const account = yield* getAccount(accountId)
      const invalid = invalidAllowedEntries(input.allowedIPs)
      if (invalid.length > 0) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", "allowedIPs holds entries that are neither an IP address nor a CIDR range", {
            field: "allowedIPs",
            invalid
          })
        )
      }
      const now = yield* Clock.currentTimeMillis
      const expiresAt = input.expiresAt === null ? null : input.expiresAt.epochMillis
      if (expiresAt !== null && expiresAt <= now) {
        return yield* Effect.fail(engineError("VALIDATION_ERROR", "expiresAt must be in the future", { field: "expiresAt" }))
      }
      const secret = generateKeySecret()
      const record: ApiKey = {
        id: newApiKeyId(),
        accountId: account.id,
        name: input.name,
        scopes: [...new Set(input.scopes)],
        allowedIPs: input.allowedIPs.map((e) => e.trim()),
        hash: hashKeySecret(secret),
        hint: keyHint(secret),
        active: true,
        expiresAt,
        createdAt: now
      }
      yield* keys.create(record)
      return { record, secret }
    })

  const deactivateKey = (id: string): Effect.Effect<ApiKey, EngineError | StoreError> =>
    keys.deactivate(id as ApiKeyId).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(engineError("NOT_FOUND", `No API key "${id}"`, { keyId: id })),
        onSome: Effect.succeed
      }))
    )

  /** A new secret now; the old one keeps signing beside it for `overlapSeconds`. */
  const rotateWebhookSecret = (id: string, overlapSeconds: number): Effect.Effect<Account, EngineError | StoreError> =>
    Effect.gen(function*() {
      if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > 30 * 24 * 3600) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", "overlapSeconds must be a whole number from 0 to 2592000 (30 days)", { field: "overlapSeconds" })
        )
      }
      const now = yield* Clock.currentTimeMillis
      const rotated = yield* accounts.rotateWebhookSecret(id as AccountId, newWebhookSecret(), now + overlapSeconds * 1000)
      return yield* Option.match(rotated, { onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed })
    })

  const ledger = (id: string) => getAccount(id).pipe(Effect.zipRight(accounts.ledger(id as AccountId)))

  return { createAccount, getAccount, addCredits, createKey, deactivateKey, ledger, rotateWebhookSecret } as const
})

export class Admin extends Context.Tag("genjobs/Admin")<Admin, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Admin, make)
}
