import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { invalidAllowedEntries } from "../domain/access.js"
import { type Account, type AccountUpdate, type ApiKey, type ApiKeyUpdate, type NewAccount, type NewApiKey } from "../domain/account.js"
import { generateKeySecret, hashKeySecret, keyHint } from "../domain/apiKeySecret.js"
import { type AuditAction, type AuditActor, changesBetween, newAuditId, redact, SYSTEM_ACTOR } from "../domain/audit.js"
import { type CatalogDiff, catalogDiff, isEmptyDiff } from "../domain/catalogDiff.js"
import { engineError, type EngineError, type StoreError } from "../domain/errors.js"
import { MAX_MICRO_CENTS } from "../domain/limits.js"
import { type AccountId, type ApiKeyId, newAccountId, newApiKeyId } from "../domain/ids.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { AccountSettingsRepo } from "../ports/AccountSettingsRepo.js"
import { ApiKeyRepo } from "../ports/ApiKeyRepo.js"
import { AuditLog } from "../ports/AuditLog.js"
import type { StoredCatalog } from "../ports/CatalogRepo.js"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { Catalog } from "./Catalog.js"
import { reopenFailedDelivery } from "./Webhooks.js"

export interface CreatedKey {
  readonly record: ApiKey
  /** The secret: shown once, never stored. */
  readonly secret: string
}

/** What replacing the catalog with a document would change, against the revision it was compared with. */
export interface CatalogPreview {
  readonly revision: number
  readonly unchanged: boolean
  readonly diff: CatalogDiff
}

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64url")}`

const accountNotFound = (id: string) => engineError("NOT_FOUND", `No account "${id}"`, { accountId: id })

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * The operator's writes. Each one is recorded in the audit log with its actor (SYSTEM_ACTOR
 * when the host's code calls without one) in the same transaction as the change.
 */
export const make = Effect.gen(function*() {
  const accounts = yield* AccountRepo
  const keys = yield* ApiKeyRepo
  const settings = yield* AccountSettingsRepo
  const audit = yield* AuditLog
  const catalog = yield* Catalog
  const deliveries = yield* WebhookDeliveryRepo
  const webhookSignal = yield* WebhookSignal

  /** The change with its audit entry; `summary` is redacted whatever it holds. */
  const audited = <A, E>(
    by: AuditActor,
    action: AuditAction,
    change: Effect.Effect<A, E>,
    describe: (result: A) => { readonly target: string; readonly summary: Record<string, unknown> }
  ): Effect.Effect<A, E | StoreError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      audit.recorded(change, (result) => {
        const { summary, target } = describe(result)
        return {
          id: newAuditId(now),
          actor: by.actor,
          action,
          target,
          summary: redact(summary) as Record<string, unknown>,
          requestId: by.requestId,
          createdAt: now
        }
      }))

  const createAccount = (input: NewAccount, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, StoreError> =>
    audited(by, "account.create", Effect.gen(function*() {
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
        ...(input.budget == null ? {} : { budget: input.budget }),
        createdAt: yield* Clock.currentTimeMillis
      }
      return yield* accounts.create(account, input.creditsMicroCents)
    }), (account) => ({ target: account.id, summary: { ...input } }))

  const getAccount = (id: string): Effect.Effect<Account, EngineError | StoreError> =>
    accounts.get(id as AccountId).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }))
    )

  /** Sets the settings the update holds; an empty update is refused, so a request that changes nothing is noticed. */
  const updateAccount = (id: string, update: AccountUpdate, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, EngineError | StoreError> =>
    Effect.gen(function*() {
      const fields = Object.entries(update).filter(([, v]) => v !== undefined).map(([k]) => k)
      if (fields.length === 0) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", "Send at least one of name, maxConcurrentJobs, segments, allowedModels, discounts, budget")
        )
      }
      const { after } = yield* audited(by, "account.update", Effect.gen(function*() {
        const before = yield* getAccount(id)
        const updated = yield* settings.update(before.id, update)
        return { before, after: yield* Option.match(updated, { onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }) }
      }), ({ after, before }) => ({ target: after.id, summary: { changes: changesBetween(before, update) } }))
      return after
    })

  const addCredits = (id: string, amountMicroCents: number, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<Account, EngineError | StoreError> =>
    audited(by, "account.credit", Effect.gen(function*() {
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
    }), (account) => ({ target: account.id, summary: { amountMicroCents, balanceMicroCents: account.balanceMicroCents } }))

  const createKey = (accountId: string, input: NewApiKey, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<CreatedKey, EngineError | StoreError> =>
    audited(by, "key.create", Effect.gen(function*() {
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
        ...(input.budget == null ? {} : { budget: input.budget }),
        createdAt: now
      }
      yield* keys.create(record)
      return { record, secret }
    }), ({ record }) => ({
      target: record.id,
      summary: {
        accountId: record.accountId,
        name: record.name,
        hint: record.hint,
        scopes: record.scopes,
        allowedIPs: record.allowedIPs,
        expiresAt: iso(record.expiresAt),
        budget: record.budget ?? null
      }
    }))

  /** Sets a key's budget (null removes it); the key's other settings are fixed at creation. */
  const updateKey = (id: string, update: ApiKeyUpdate, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<ApiKey, EngineError | StoreError> =>
    audited(
      by,
      "key.update",
      settings.updateKeyBudget(id as ApiKeyId, update.budget).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(engineError("NOT_FOUND", `No API key "${id}"`, { keyId: id })),
          onSome: Effect.succeed
        }))
      ),
      (key) => ({ target: key.id, summary: { accountId: key.accountId, budget: update.budget } })
    )

  const deactivateKey = (id: string, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<ApiKey, EngineError | StoreError> =>
    audited(
      by,
      "key.deactivate",
      keys.deactivate(id as ApiKeyId).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(engineError("NOT_FOUND", `No API key "${id}"`, { keyId: id })),
          onSome: Effect.succeed
        }))
      ),
      (key) => ({ target: key.id, summary: { accountId: key.accountId, name: key.name, hint: key.hint } })
    )

  /** A new secret now; the old one keeps signing beside it for `overlapSeconds`. */
  const rotateWebhookSecret = (
    id: string,
    overlapSeconds: number,
    by: AuditActor = SYSTEM_ACTOR
  ): Effect.Effect<Account, EngineError | StoreError> =>
    Effect.gen(function*() {
      if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > 30 * 24 * 3600) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", "overlapSeconds must be a whole number from 0 to 2592000 (30 days)", { field: "overlapSeconds" })
        )
      }
      const now = yield* Clock.currentTimeMillis
      return yield* audited(
        by,
        "account.webhook_secret.rotate",
        accounts.rotateWebhookSecret(id as AccountId, newWebhookSecret(), now + overlapSeconds * 1000).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed }))
        ),
        (account) => ({
          target: account.id,
          summary: { overlapSeconds, previousSecretExpiresAt: iso(account.previousWebhookSecretExpiresAt) }
        })
      )
    })

  /** Checks and stores a whole catalog document, if still at `ifRevision` when given (see Catalog.replace). */
  const replaceCatalog = (
    input: unknown,
    by: AuditActor = SYSTEM_ACTOR,
    ifRevision?: number
  ): Effect.Effect<StoredCatalog, EngineError | StoreError> =>
    audited(by, "catalog.replace", catalog.replace(input, ifRevision), (stored) => ({
      target: "catalog",
      summary: {
        revision: stored.revision,
        models: stored.document.models.length,
        providers: stored.document.providers.length
      }
    }))

  /**
   * The check `replaceCatalog` makes, and what the document would add, remove and change, by id;
   * nothing is stored. A dry run before a replace, as `genjobs catalog apply` shows.
   */
  const previewCatalog = (input: unknown): Effect.Effect<CatalogPreview, EngineError | StoreError> =>
    Effect.gen(function*() {
      const next = yield* catalog.check(input)
      const { document, revision } = yield* catalog.snapshot
      const diff = catalogDiff(document, next)
      return { revision, unchanged: isEmptyDiff(diff), diff }
    })

  /** Sends a failed delivery of any account once more, now, by the rule an account's own retry follows. */
  const retryDelivery = (id: string, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<WebhookDelivery, EngineError | StoreError> =>
    audited(
      by,
      "delivery.retry",
      reopenFailedDelivery(id, () => true).pipe(Effect.provideService(WebhookDeliveryRepo, deliveries)),
      (delivery) => ({ target: delivery.id, summary: { accountId: delivery.accountId, jobId: delivery.jobId } })
    ).pipe(
      // Woken once the change is committed, so a dispatcher that wakes finds it due.
      Effect.tap(() => webhookSignal.notify)
    )

  const ledger = (id: string) => getAccount(id).pipe(Effect.zipRight(accounts.ledger(id as AccountId)))

  return {
    createAccount,
    getAccount,
    updateAccount,
    addCredits,
    createKey,
    updateKey,
    deactivateKey,
    ledger,
    rotateWebhookSecret,
    replaceCatalog,
    previewCatalog,
    retryDelivery
  } as const
})

export class Admin extends Context.Tag("genjobs/Admin")<Admin, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Admin, make)
}
